// The host as a Device: copies are memcpy, vector math runs on the OpenMP
// pool, the optimizer is the fused CPU one from optimizers/.
#include <cstring>

#include "optimizers/optimizer.h"
#include "runtime/cpu/parallel.h"
#include "runtime/device.h"

namespace ort_train {
namespace {

Status check_float_pair(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat || a.numel() != b.numel())
    return invalid_argument("{}: expected two float32 tensors of the same size, got {} {} and {} {}", what,
                            dtype_name(a.dtype()), dims_to_string(a.dims()), dtype_name(b.dtype()),
                            dims_to_string(b.dims()));
  return Status::Ok();
}

class CpuDevice : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string description() const override { return "cpu"; }
  std::shared_ptr<Allocator> make_allocator() override { return make_cpu_caching_allocator(); }

  Status copy(const Tensor& src, const Tensor& dst) override {
    if (src.device() != DeviceKind::kCpu || dst.device() != DeviceKind::kCpu)
      return invalid_argument("the CPU device cannot copy tensors that live on a GPU");
    if (src.nbytes() != dst.nbytes())
      return invalid_argument("copy between tensors of different sizes ({} and {} bytes)", src.nbytes(), dst.nbytes());
    if (src.raw() != dst.raw() && src.nbytes() > 0) std::memcpy(dst.raw(), src.raw(), src.nbytes());
    return Status::Ok();
  }
  Status synchronize() override { return Status::Ok(); }

  Status add_into(const Tensor& acc, const Tensor& x) override {
    RETURN_IF_ERROR(check_float_pair(acc, x, "add_into"));
    float* a = acc.data<float>();
    const float* b = x.data<float>();
    parallel_for(acc.numel(), 1 << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) a[k] += b[k];
    });
    return Status::Ok();
  }
  Status scale(const Tensor& t, float s) override {
    RETURN_IF_ERROR(check_float_pair(t, t, "scale"));
    float* a = t.data<float>();
    parallel_for(t.numel(), 1 << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) a[k] *= s;
    });
    return Status::Ok();
  }
  Result<double> global_norm(const std::vector<Tensor>& ts) override { return global_grad_norm(ts); }
  Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerSettings& s, std::vector<ParamSlot> params) override {
    return Optimizer::create(s, std::move(params));
  }
};

}  // namespace

std::shared_ptr<Device> make_cpu_device() { return std::make_shared<CpuDevice>(); }

}  // namespace ort_train
