#include "training/batch_source.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>

#include "training/batch_data.h"
#include "training/data_files.h"
#include "training/row_dataset.h"
#include "training/row_order.h"
#include "training/synthetic_dims.h"
#include "training/whole_number.h"

namespace ort_train {

namespace {

// Rows of a RowDataset, batch_size per micro-batch: micro-batch m is
// positions [(m % per_epoch) * batch, + batch) of epoch m / per_epoch's
// order. Ranks take different m, so they read disjoint rows of an epoch.
Result<BatchSource> row_batch_source(std::shared_ptr<const RowDataset> ds, const std::string& data,
                                     const ModelDescription& desc, uint64_t seed) {
  // Without --batch-size, Hugging Face Trainer's per-device default.
  if (!desc.batch_size)
    spdlog::info("{}: batch size {} (the default; --batch-size or batch_size: sets it)", data, kDefaultBatchSize);
  const int64_t batch = desc.batch_size.value_or(kDefaultBatchSize);
  const uint64_t rows = ds->rows();
  const int64_t per_epoch = static_cast<int64_t>(rows / static_cast<uint64_t>(batch));
  if (per_epoch == 0) return invalid_argument("{}: {} samples make no batch of {}", data, rows, batch);
  auto order = std::make_shared<RowOrder>(rows, seed, desc.data.shuffle);
  std::string description = ds->describe();
  return BatchSource{[ds, order, batch, per_epoch](int64_t micro) -> Result<std::map<std::string, Tensor>> {
    const uint64_t epoch = static_cast<uint64_t>(micro / per_epoch);
    const uint64_t first = static_cast<uint64_t>(micro % per_epoch) * static_cast<uint64_t>(batch);
    std::vector<uint64_t> picked(static_cast<size_t>(batch));
    for (size_t i = 0; i < picked.size(); ++i) picked[i] = order->row(epoch, first + i);
    return ds->read(picked);
  }, per_epoch, description};
}

// The token windows' layout from the model's inputs: seq from input_ids' last
// dim (a number, or a dim the description or --dim sizes), dtypes from the
// inputs; every other input the model needs must be filled.
Result<TokenWindows> token_windows(const TrainingGraph& tg, const ModelDescription& desc) {
  const TokenDataConfig& cfg = desc.data.tokens;
  TokenWindows w;
  w.raw_dtype = cfg.dtype == "uint32" ? DType::kUInt32 : DType::kUInt16;
  w.shift_labels = cfg.shift_labels;
  std::vector<std::string> missing;
  const ValueInfo* ids = nullptr;
  for (const ValueInfo* v : tg.model.graph.required_inputs()) {
    if (v->name == cfg.input_ids) ids = v;
    else if (v->name == cfg.labels) w.labels = v->name, w.labels_dtype = v->dtype;
    else if (cfg.fill.count(v->name)) w.fill[v->name] = {v->dtype, cfg.fill.at(v->name)};
    else missing.push_back(v->name);
  }
  if (!ids) return invalid_argument("token data: the model has no input '{}' for the token ids (data.tokens.input_ids "
                                    "names it)", cfg.input_ids);
  if (!missing.empty())
    return invalid_argument("token data fills input_ids '{}'{} only; the model also needs {} (data.tokens.fill: "
                            "{{name: value}} fills an input with one value, data.tokens.labels names the labels)",
                            cfg.input_ids, w.labels.empty() ? "" : " and labels '" + w.labels + "'",
                            fmt::join(missing, ", "));
  for (const auto& [name, value] : cfg.fill)
    if (!w.fill.count(name)) return invalid_argument("data.tokens.fill: the model has no input '{}'", name);
  // An integer input's fill is a whole number its dtype holds (a cast of
  // 1e300 to int64 is undefined behaviour).
  for (const auto& [name, f] : w.fill) {
    const auto& [dtype, value] = f;
    if (dtype_is_integer(dtype) && !holds_whole_number(dtype, value))
      return invalid_argument("data.tokens.fill.{}: {:g} is not a whole number that the input's {} holds", name, value,
                              dtype_name(dtype));
  }
  if (cfg.labels != "labels" && w.labels.empty())
    return invalid_argument("data.tokens.labels: the model has no input '{}'", cfg.labels);
  w.input_ids = ids->name;
  w.input_dtype = ids->dtype;
  // Its shape as described (inputs:), else as the model declares it.
  Shape shape;
  for (const TensorDecl& d : desc.inputs)
    if (d.name == ids->name) shape = d.shape;
  if (shape.empty() && ids->shape) shape = *ids->shape;
  if (shape.size() != 2)
    return invalid_argument("token data: input '{}' must be [batch, seq], it is declared with {} dims", ids->name,
                            shape.size());
  const Dim& seq = shape[1];
  if (seq.known()) w.seq = seq.value;
  else if (desc.dims.count(seq.symbol)) w.seq = desc.dims.at(seq.symbol);
  else
    return invalid_argument("token data: the sequence length, input '{}''s dim '{}', has no size (dims: {{{}: N}} in "
                            "the description, or --dim {}=N)", ids->name, seq.symbol, seq.symbol, seq.symbol);
  return w;
}

// Batch directories are read once and kept while they total under 256 MiB
// (the protobuf parse would otherwise cost as much as a small model's step).
BatchSource batch_dir_source(const std::vector<std::string>& dirs, const std::vector<std::string>& names) {
  struct Cache {
    std::mutex mu;
    std::map<size_t, std::map<std::string, Tensor>> batches;
    size_t bytes = 0;
  };
  auto cache = std::make_shared<Cache>();
  return BatchSource{[dirs, names, cache](int64_t micro) -> Result<std::map<std::string, Tensor>> {
    size_t i = static_cast<size_t>(micro) % dirs.size();
    {
      std::lock_guard lock(cache->mu);
      auto it = cache->batches.find(i);
      if (it != cache->batches.end()) return it->second;
    }
    ASSIGN_OR_RETURN(auto batch, read_batch_dir(dirs[i], names));
    size_t bytes = 0;
    for (const auto& [name, t] : batch) bytes += t.nbytes();
    std::lock_guard lock(cache->mu);
    if (!cache->batches.count(i) && cache->bytes + bytes <= (size_t{256} << 20)) {
      cache->batches[i] = batch;
      cache->bytes += bytes;
    }
    return batch;
  }, static_cast<int64_t>(dirs.size()), fmt::format("{} batch folders", dirs.size())};
}

}  // namespace

Result<BatchSource> make_batch_source(const std::string& data, const TrainingGraph& tg, const ModelDescription& desc,
                                      uint64_t seed) {
  std::vector<std::string> names;
  for (const ValueInfo* v : tg.model.graph.required_inputs()) names.push_back(v->name);
  ASSIGN_OR_RETURN(DataFiles files, resolve_data_files(data));
  // The held-out shards, when the training data's folder or glob holds them.
  if (!desc.data.eval.empty() && desc.data.eval != data) {
    Result<DataFiles> held_out = resolve_data_files(desc.data.eval);  // its own errors come when it is read
    if (held_out.ok()) {
      for (const std::string& f : leave_out_held_out(files, *held_out))
        spdlog::warn("{}: leaves out {}, the held-out data (--eval-data): held-out rows are not trained on", data, f);
      if (files.files.empty())
        return invalid_argument("{}: every shard is the held-out data {}; give training data apart from it", data,
                                desc.data.eval);
    }
  }
  switch (files.kind) {
    case DataFiles::Kind::kSynthetic: {
      std::vector<TensorDecl> decls = desc.inputs;
      decls.insert(decls.end(), desc.labels.begin(), desc.labels.end());
      for (const ValueInfo* v : tg.model.graph.required_inputs()) {
        if (std::any_of(decls.begin(), decls.end(), [&](const TensorDecl& d) { return d.name == v->name; })) continue;
        if (!v->shape) return invalid_argument("synthetic data: input '{}' has no shape; declare it under inputs:", v->name);
        decls.push_back(TensorDecl{v->name, v->dtype, *v->shape, std::nullopt});
      }
      SyntheticDims sized = default_synthetic_dims(tg.model.graph, decls, desc.dims, desc.batch_size);
      for (const std::string& said : sized.defaulted) spdlog::info("synthetic data: {}", said);
      std::map<std::string, int64_t> dims = std::move(sized.dims);
      return BatchSource{[decls, dims, seed](int64_t micro) {
        return synthetic_batch(decls, dims, seed * 1000003u + static_cast<uint64_t>(micro));
      }, 1, "synthetic"};
    }
    case DataFiles::Kind::kBatchDirs: {
      ASSIGN_OR_RETURN(auto dirs, list_batch_dirs(data));
      return batch_dir_source(dirs, names);
    }
    case DataFiles::Kind::kNpz: {
      ASSIGN_OR_RETURN(std::unique_ptr<RowDataset> ds, open_npz_shards(files.files, names));
      return row_batch_source(std::move(ds), data, desc, seed);
    }
    case DataFiles::Kind::kTokens: {
      ASSIGN_OR_RETURN(TokenWindows w, token_windows(tg, desc));
      ASSIGN_OR_RETURN(std::unique_ptr<RowDataset> ds, open_token_shards(files.files, w));
      return row_batch_source(std::move(ds), data, desc, seed);
    }
  }
  return invalid_argument("--data {}: unknown kind", data);
}

}  // namespace ort_train
