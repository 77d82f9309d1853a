// The GPU as a Device: tensors in the caching device allocator, every copy
// on the context's compute stream, micro-batches staged on a copy stream.
// Registers itself, so a CUDA build offers --device cuda.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <mutex>
#include <vector>

#include "cuda_kernels/device_query.h"
#include "runtime/cuda/batch_staging.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/device.h"

namespace ort_train::cuda {
namespace {

class CudaDevice : public Device {
 public:
  explicit CudaDevice(CudaContext* c) : c_(c) {}
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  int index() const override { return c_->device; }
  std::string description() const override {
    return fmt::format("cuda:{} ({})", c_->device, device_description(c_->device));
  }
  uint64_t memory_bytes() const override { return c_->props.totalGlobalMem; }
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
    if (to_host) return synchronize();
    return Status::Ok();
  }
  // Every wait on the stream also reads what its kernels recorded of a bad index.
  Status synchronize() override {
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c_->compute));
    return c_->index_faults->check();
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
