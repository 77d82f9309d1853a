#include "runtime/vector_ops.h"

#include <map>
#include <mutex>

namespace ort_train {
namespace {

struct Registry {
  std::mutex mu;
  std::map<DeviceKind, std::function<VectorOps*()>> get;
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

VectorOpsRegistrar::VectorOpsRegistrar(DeviceKind kind, std::function<VectorOps*()> get) {
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().get[kind] = std::move(get);
}

Result<VectorOps*> vector_ops(DeviceKind kind) {
  std::function<VectorOps*()> get;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    auto it = registry().get.find(kind);
    if (it != registry().get.end()) get = it->second;
  }
  if (!get) return unsupported("no vector arithmetic is registered for device {}", kind == DeviceKind::kCpu ? "cpu" : "cuda");
  return get();
}

Result<std::vector<double>> VectorOps::norm_partials(const std::vector<Tensor>&) {
  return unsupported("the norm's partial sums are computed on the CPU only");
}

}  // namespace ort_train
