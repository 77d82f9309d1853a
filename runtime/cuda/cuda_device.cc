// The GPU as a Device: tensors in the caching device allocator, every copy
// and kernel on the context's compute stream, the fused optimizers of
// optimizers/cuda/. Registers itself, so a CUDA build offers --device cuda.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cmath>
#include <mutex>
#include <vector>

#include "cuda_kernels/device_query.h"
#include "cuda_kernels/vector_math.h"
#include "optimizers/cuda/cuda_optimizer.h"
#include "runtime/cuda/batch_staging.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/device.h"

namespace ort_train::cuda {
namespace {

Status check_float_pair(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat || a.numel() != b.numel())
    return invalid_argument("{}: expected two float32 tensors of the same size", what);
  if (a.device() != DeviceKind::kCuda || b.device() != DeviceKind::kCuda)
    return invalid_argument("{}: expected tensors on the GPU", what);
  return Status::Ok();
}

class CudaDevice : public Device {
 public:
  explicit CudaDevice(CudaContext* c) : c_(c) {}
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string description() const override {
    return fmt::format("cuda:{} ({})", c_->device, device_description(c_->device));
  }
  void configure(const DeviceSettings& settings) override { (void)init_context(settings); }
  std::shared_ptr<Allocator> make_allocator() override { return c_->allocator; }

  Status copy(const Tensor& src, const Tensor& dst) override {
    if (src.nbytes() != dst.nbytes())
      return invalid_argument("copy between tensors of different sizes ({} and {} bytes)", src.nbytes(), dst.nbytes());
    if (src.nbytes() == 0 || src.raw() == dst.raw()) return Status::Ok();
    if ((src.device() == DeviceKind::kCuda && !src.raw()) || (dst.device() == DeviceKind::kCuda && !dst.raw()))
      return make_error(ErrorCode::kInternal, "out of GPU memory ({} bytes requested)", dst.nbytes());
    bool to_host = dst.device() == DeviceKind::kCpu;
    if (src.device() == DeviceKind::kCpu && !to_host) return upload(dst.raw(), src.raw(), src.nbytes());
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, c_->compute));
    // A pageable host destination is only complete once the stream reaches the copy.
    if (to_host) CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c_->compute));
    return Status::Ok();
  }
  Status synchronize() override {
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c_->compute));
    return Status::Ok();
  }
  Result<std::map<std::string, Tensor>> stage(std::map<std::string, Tensor> batch) override {
    std::shared_ptr<BatchStaging> staging;
    {
      std::lock_guard<std::mutex> lock(staging_mu_);
      if (!staging_) {
        ASSIGN_OR_RETURN(staging_, BatchStaging::create(c_->device, c_->compute));
      }
      staging = staging_;
    }
    for (auto& [name, t] : batch) {
      ASSIGN_OR_RETURN(t, staging->stage(t));
    }
    return batch;
  }
  Status await(const Tensor& t) override {
    std::shared_ptr<BatchStaging> staging;
    {
      std::lock_guard<std::mutex> lock(staging_mu_);
      staging = staging_;
    }
    return staging ? staging->await(t) : Status::Ok();
  }

  Status add_into(const Tensor& acc, const Tensor& x) override {
    RETURN_IF_ERROR(check_float_pair(acc, x, "add_into"));
    CUDA_RETURN_IF_ERROR(launch_add_into(acc.data<float>(), x.data<float>(), acc.numel(), c_->compute));
    return Status::Ok();
  }
  Status scale(const Tensor& t, float s) override {
    RETURN_IF_ERROR(check_float_pair(t, t, "scale"));
    CUDA_RETURN_IF_ERROR(launch_scale(t.data<float>(), s, t.numel(), c_->compute));
    return Status::Ok();
  }
  Result<double> global_norm(const std::vector<Tensor>& ts) override {
    std::vector<const float*> ptrs;
    std::vector<int64_t> sizes;
    for (const Tensor& t : ts) {
      RETURN_IF_ERROR(check_float_pair(t, t, "global_norm"));
      ptrs.push_back(t.data<float>());
      sizes.push_back(t.numel());
    }
    int64_t n = static_cast<int64_t>(ts.size());
    auto table = scratch(n * (sizeof(float*) + sizeof(int64_t)) + (sum_squares_partials(n) + 1) * sizeof(double));
    auto* base = static_cast<char*>(table->data());
    auto* d_ptrs = reinterpret_cast<const float**>(base);
    auto* d_sizes = reinterpret_cast<int64_t*>(base + n * sizeof(float*));
    auto* d_out = reinterpret_cast<double*>(base + n * (sizeof(float*) + sizeof(int64_t)));
    double* d_partials = d_out + 1;
    RETURN_IF_ERROR(upload(d_ptrs, ptrs.data(), n * sizeof(float*)));
    RETURN_IF_ERROR(upload(d_sizes, sizes.data(), n * sizeof(int64_t)));
    CUDA_RETURN_IF_ERROR(launch_sum_squares(d_ptrs, d_sizes, n, d_partials, d_out, c_->compute));
    double sq = 0;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&sq, d_out, sizeof(double), cudaMemcpyDeviceToHost, c_->compute));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c_->compute));
    return std::sqrt(sq);
  }
  Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerSettings& s, std::vector<ParamSlot> params) override {
    return make_cuda_optimizer(s, std::move(params));
  }

 private:
  CudaContext* c_;
  std::mutex staging_mu_;
  std::shared_ptr<BatchStaging> staging_;  // made on first use, by the prefetch thread
};

const DeviceRegistrar kRegistrar(
    DeviceKind::kCuda,
    [](const DeviceSettings& settings) -> Result<std::shared_ptr<Device>> {
      ASSIGN_OR_RETURN(CudaContext * c, init_context(settings));
      return std::shared_ptr<Device>(std::make_shared<CudaDevice>(c));
    },
    [] { return device_count(); });

}  // namespace
}  // namespace ort_train::cuda
