// The host as a Device: memory from the caching allocator, copies are memcpy,
// everything is synchronous.
#include <cstring>

#include "runtime/cpu/host_memory.h"
#include "runtime/device.h"

namespace ort_train {
namespace {

class CpuDevice : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string description() const override { return "cpu"; }
  // Read once: the executor asks before every node it plans.
  uint64_t memory_bytes() const override { return memory_bytes_; }
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
 private:
  const uint64_t memory_bytes_ = host_memory_bytes();  // physical, RLIMIT_AS, the cgroup's limit
};

}  // namespace

std::shared_ptr<Device> make_cpu_device() { return std::make_shared<CpuDevice>(); }

}  // namespace ort_train
