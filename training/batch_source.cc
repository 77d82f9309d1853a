#include "training/batch_source.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>

#include "training/batch_data.h"
#include "training/npz.h"

namespace ort_train {

namespace {

// NPZ: one array per input/label, first axis = samples, cut into batch_size
// micro-batches (an incomplete last batch is dropped), reshuffled every epoch
// from the seed and the epoch number, so any micro-batch index maps to the
// same samples (what resuming needs).
Result<BatchSource> npz_batch_source(const std::string& path, const std::vector<std::string>& names,
                                     const ModelDescription& desc, uint64_t seed) {
  ASSIGN_OR_RETURN(auto arrays, read_npz(path));
  // Without --batch-size, Hugging Face Trainer's per-device default.
  constexpr int64_t kDefaultBatch = 8;
  if (!desc.batch_size) spdlog::info("{}: batch size {} (the default; --batch-size or batch_size: sets it)", path, kDefaultBatch);
  int64_t batch = desc.batch_size.value_or(kDefaultBatch), n = -1;
  auto data = std::make_shared<std::map<std::string, Tensor>>();
  for (const std::string& name : names) {
    auto it = arrays.find(name);
    if (it == arrays.end()) return invalid_argument("{}: no array named '{}'", path, name);
    if (it->second.rank() < 1) return invalid_argument("{}: array '{}' has no sample axis", path, name);
    if (n >= 0 && it->second.dims()[0] != n)
      return invalid_argument("{}: array '{}' has {} samples, others {}", path, name, it->second.dims()[0], n);
    n = it->second.dims()[0];
    (*data)[name] = it->second;
  }
  int64_t per_epoch = n / batch;
  if (per_epoch == 0) return invalid_argument("{}: {} samples make no batch of {}", path, n, batch);
  bool shuffle = desc.data.shuffle;
  return BatchSource{[data, batch, n, per_epoch, shuffle, seed](int64_t micro) -> Result<std::map<std::string, Tensor>> {
    int64_t epoch = micro / per_epoch, first = (micro % per_epoch) * batch;
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    if (shuffle) {
      std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch));
      std::shuffle(order.begin(), order.end(), gen);
    }
    std::map<std::string, Tensor> out;
    for (const auto& [name, t] : *data) {
      Dims dims = t.dims();
      dims[0] = batch;
      Tensor b = Tensor::host(t.dtype(), dims);
      size_t row = b.nbytes() / static_cast<size_t>(batch);
      for (int64_t i = 0; i < batch; ++i)
        std::memcpy(static_cast<char*>(b.raw()) + static_cast<size_t>(i) * row,
                    static_cast<const char*>(t.raw()) + static_cast<size_t>(order[static_cast<size_t>(first + i)]) * row,
                    row);
      out[name] = b;
    }
    return out;
  }, per_epoch};
}

}  // namespace

Result<BatchSource> make_batch_source(const std::string& data, const TrainingGraph& tg, const ModelDescription& desc,
                                      uint64_t seed) {
  std::vector<std::string> names;
  for (const ValueInfo* v : tg.model.graph.required_inputs()) names.push_back(v->name);
  if (data == "synthetic") {
    std::vector<TensorDecl> decls = desc.inputs;
    decls.insert(decls.end(), desc.labels.begin(), desc.labels.end());
    for (const ValueInfo* v : tg.model.graph.required_inputs()) {
      if (std::any_of(decls.begin(), decls.end(), [&](const TensorDecl& d) { return d.name == v->name; })) continue;
      if (!v->shape) return invalid_argument("synthetic data: input '{}' has no shape; declare it under inputs:", v->name);
      decls.push_back(TensorDecl{v->name, v->dtype, *v->shape, std::nullopt});
    }
    std::map<std::string, int64_t> dims = desc.dims;
    return BatchSource{[decls, dims, seed](int64_t micro) {
      return synthetic_batch(decls, dims, seed * 1000003u + static_cast<uint64_t>(micro));
    }, 1};
  }
  if (data.size() > 4 && data.compare(data.size() - 4, 4, ".npz") == 0) return npz_batch_source(data, names, desc, seed);
  ASSIGN_OR_RETURN(auto dirs, list_batch_dirs(data));
  // Batches are read once and kept while they total under 256 MiB (the
  // protobuf parse would otherwise cost as much as a small model's step).
  struct Cache {
    std::map<size_t, std::map<std::string, Tensor>> batches;
    size_t bytes = 0;
  };
  auto cache = std::make_shared<Cache>();
  return BatchSource{[dirs, names, cache](int64_t micro) -> Result<std::map<std::string, Tensor>> {
    size_t i = static_cast<size_t>(micro) % dirs.size();
    auto it = cache->batches.find(i);
    if (it != cache->batches.end()) return it->second;
    ASSIGN_OR_RETURN(auto batch, read_batch_dir(dirs[i], names));
    size_t bytes = 0;
    for (const auto& [name, t] : batch) bytes += t.nbytes();
    if (cache->bytes + bytes <= (size_t{256} << 20)) {
      cache->batches[i] = batch;
      cache->bytes += bytes;
    }
    return batch;
  }, static_cast<int64_t>(dirs.size())};
}

}  // namespace ort_train
