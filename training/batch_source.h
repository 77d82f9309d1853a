// Where the training loop's micro-batches come from: batch directories, an
// NPZ file or synthetic data, each a function of the micro-batch index, so a
// resumed run (or another rank) can start anywhere in the sequence.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "autodiff/training_graph.h"
#include "configs/model_description.h"
#include "graph/tensor.h"

namespace ort_train {

// Where micro-batches come from: called with the micro-batch index (0-based,
// global); `per_epoch` micro-batches make one pass over the data.
struct BatchSource {
  std::function<Result<std::map<std::string, Tensor>>(int64_t micro_batch)> next;
  int64_t per_epoch = 1;
  Result<std::map<std::string, Tensor>> operator()(int64_t micro_batch) const { return next(micro_batch); }
};

// Batch directories (every sub-directory of `dir`, lexical order, cycling), an
// .npz file (batch_size samples per micro-batch, reshuffled per epoch unless
// data.shuffle is false), or, for "synthetic", random tensors of the described
// shapes seeded by `seed` and the micro-batch index.
Result<BatchSource> make_batch_source(const std::string& data, const TrainingGraph& tg, const ModelDescription& desc,
                                      uint64_t seed);

}  // namespace ort_train
