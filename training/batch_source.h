// Where the training loop's micro-batches come from: batch directories, NPZ
// shards, token files or synthetic data, each a function of the micro-batch
// index, so a resumed run (or another rank) can start anywhere in the sequence.
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
// global); `per_epoch` micro-batches make one pass over the data. `next` may
// be called from several threads at once (--prefetch).
struct BatchSource {
  std::function<Result<std::map<std::string, Tensor>>(int64_t micro_batch)> next;
  int64_t per_epoch = 1;
  // What the data is, by content: shards, rows, bytes (the log line; what ranks compare).
  std::string description;
  Result<std::map<std::string, Tensor>> operator()(int64_t micro_batch) const { return next(micro_batch); }
};

// `data` as training/data_files.h resolves it: batch directories (every
// sub-directory, lexical order, cycling); NPZ shards or token files (rows
// read from disk, batch_size rows per micro-batch, each epoch in the order of
// training/row_order.h unless data.shuffle is false, an incomplete last batch
// dropped); or, for "synthetic", random tensors of the described shapes
// seeded by `seed` and the micro-batch index.
Result<BatchSource> make_batch_source(const std::string& data, const TrainingGraph& tg, const ModelDescription& desc,
                                      uint64_t seed);

}  // namespace ort_train
