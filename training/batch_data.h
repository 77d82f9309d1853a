// Where a training step's tensors come from (spec section 3), for the parts the
// gradient tools need: batch directories (one sub-directory per micro-batch with
// <tensor name>.pb files, used in lexical order) and synthetic data of the
// described shapes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "configs/model_description.h"
#include "graph/tensor.h"

namespace ort_train {

// Sub-directories of `dir` in lexical order; an error when there are none.
Result<std::vector<std::string>> list_batch_dirs(const std::string& dir);

// Reads <name>.pb for each name (escaped as tensor_file_name does) from one batch directory.
Result<std::map<std::string, Tensor>> read_batch_dir(const std::string& dir, const std::vector<std::string>& names);

// Random tensors of the declared shapes, symbolic dims bound by `dims`: floats
// standard normal, integers uniform in the declared range (default [0, 2)),
// bools fair coins. Deterministic for a seed.
Result<std::map<std::string, Tensor>> synthetic_batch(const std::vector<TensorDecl>& decls,
                                                      const std::map<std::string, int64_t>& dims, uint64_t seed);

}  // namespace ort_train
