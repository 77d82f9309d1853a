#include "training/forward_for_export.h"

#include "graph/mapped_external_data.h"

#include <cstring>

#include "graph/onnx_io.h"

namespace ort_train {

uint64_t tensor_content_hash(const Tensor& t) {
  // A multiply-xor mix per 8-byte word (FNV-1a byte by byte reads a 2.6 GB
  // model at about 1 GB/s; this several times faster). Not cryptographic:
  // it tells a replaced file from the one loaded, not a forged one.
  uint64_t h = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(t.dtype());
  auto mix = [&h](uint64_t w) {
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  };
  for (int64_t d : t.dims()) mix(static_cast<uint64_t>(d));
  const auto* p = static_cast<const unsigned char*>(t.raw());
  const size_t n = t.nbytes();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    mix(w);
  }
  uint64_t tail = 0;
  if (i < n) std::memcpy(&tail, p + i, n - i);
  mix(tail ^ (static_cast<uint64_t>(n) << 3));
  return h;
}

ForwardForExport::ForwardForExport(const Model& forward, std::string model_path)
    : structure_(forward), model_path_(std::move(model_path)) {
  structure_.graph.initializers.clear();
  for (const auto& [name, t] : forward.graph.initializers) {
    // A weight still in its file is hashed from a copy read for the purpose
    // (graph/mapped_external_data.h); one that cannot be read now is an error
    // when it is read in, before any step.
    auto bytes = readable(t);
    kept_[name] = Kept{t.dtype(), t.dims(), t.storage(), bytes.ok() ? tensor_content_hash(*bytes) : 0};
  }
}

Model ForwardForExport::with_live_initializers() const {
  Model m = structure_;
  for (const auto& [name, k] : kept_)
    if (auto storage = k.storage.lock()) m.graph.initializers[name] = Tensor(k.dtype, k.dims, std::move(storage));
  return m;
}

Status ForwardForExport::read_released(Model& m) const {
  bool all_live = true;
  for (const auto& [name, k] : kept_) all_live = all_live && m.graph.initializers.count(name);
  if (all_live) return Status::Ok();
  ASSIGN_OR_RETURN(Model again, load_model(model_path_));
  for (const auto& [name, k] : kept_) {
    if (m.graph.initializers.count(name)) continue;
    auto it = again.graph.initializers.find(name);
    if (it == again.graph.initializers.end() || tensor_content_hash(it->second) != k.hash)
      return invalid_argument("{} changed during the run: its initializer '{}' is not the one the run started from, "
                              "so the trained model cannot be written (put the original file back; the last "
                              "checkpoint has the trained state)",
                              model_path_, name);
    m.graph.initializers[name] = std::move(it->second);
  }
  return Status::Ok();
}

}  // namespace ort_train
