// Sizes for the symbolic dims that synthetic data needs and nobody gave, where
// the model makes one obvious (issue 51: `ort_train --model bert.onnx
// --optimizer Lamb --lr 1e-4` stopped first for --batch-size, then for --dim
// seq=N). The batch dim ("batch", or the symbol every input starts with):
// the description's batch_size, else kDefaultBatchSize. Any other dim: the
// rows of the model's position table (a weight that a Gather indexes with
// computed positions; one named for positions first, else the largest), at
// most kDefaultSequenceLength. Dims given by --dim or dims: are kept.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "configs/model_description.h"
#include "graph/graph.h"

namespace ort_train {

// Hugging Face Trainer's per-device default batch.
inline constexpr int64_t kDefaultBatchSize = 8;
// A sequence length that trains in seconds on a CPU, below most models' position tables.
inline constexpr int64_t kDefaultSequenceLength = 128;

struct SyntheticDims {
  std::map<std::string, int64_t> dims;
  std::vector<std::string> defaulted;  // "batch 8 (...)", one per dim given a default, for the log
};

SyntheticDims default_synthetic_dims(const Graph& g, const std::vector<TensorDecl>& decls,
                                     std::map<std::string, int64_t> dims, std::optional<int64_t> batch_size);

}  // namespace ort_train
