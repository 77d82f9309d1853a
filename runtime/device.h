// The device interface: where tensors live and kernels run. The executor and
// the training loop talk to a Device, never to CUDA directly, so the same
// loop runs on the CPU or a GPU. The CPU device always exists; the CUDA device
// and kernels live in a plugin (libort_train_cuda.so, built when nvcc is found)
// that registers them when it is loaded, on the first call that needs CUDA.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "runtime/allocator.h"

namespace ort_train {

// Choices that trade speed for reproducibility or precision on a device.
struct DeviceSettings {
  int index = 0;              // which GPU (cuda:i)
  bool deterministic = false; // bit-identical runs: no float atomics, fixed algorithms
  bool allow_tf32 = true;     // float32 GEMM/convolution may use TF32 tensor cores
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  // Which device of its kind (the i of cuda:i; 0 for the CPU): what a device
  // communicator binds to, rather than the launcher's local rank.
  virtual int index() const { return 0; }
  // "cpu" or "cuda:0 (NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB)".
  virtual std::string description() const = 0;
  // Applies speed/reproducibility choices (the CPU is always deterministic).
  virtual void configure(const DeviceSettings& settings) { (void)settings; }
  // The memory one tensor can never exceed here: the machine's physical memory,
  // or the GPU's. The executor refuses larger outputs by name before a kernel
  // runs, since a shape can come from a stranger's file (0: no limit known).
  virtual uint64_t memory_bytes() const { return 0; }
  // What a plan and any one tensor may take here: memory_bytes(), or less when
  // set_memory_limit (--max-memory) asked for less (0: no limit known).
  uint64_t memory_budget() const;
  // The allocator an executor on this device takes its buffers from.
  virtual std::shared_ptr<Allocator> make_allocator() = 0;
  // Copies src into dst (same byte size); either may be on the host or this device.
  virtual Status copy(const Tensor& src, const Tensor& dst) = 0;
  // Waits for all queued work; the first asynchronous error surfaces here.
  virtual Status synchronize() = 0;
  // Starts moving a micro-batch to the device ahead of its step; may be called
  // from another thread (the trainer's prefetch). The CPU returns it as is.
  virtual Result<std::map<std::string, Tensor>> stage(std::map<std::string, Tensor> batch) { return batch; }
  // Makes the device's work wait until a staged tensor has arrived (the
  // executor calls it for every feed); a no-op for any other tensor.
  virtual Status await(const Tensor& t) {
    (void)t;
    return Status::Ok();
  }
};

// The device for `kind` (created once per process and kind). CUDA fails with a
// message when this build lacks it or no GPU is visible.
Result<std::shared_ptr<Device>> get_device(DeviceKind kind, const DeviceSettings& settings = {});
// --max-memory: a budget in bytes every device's memory_budget() keeps under
// (0, the default: the device's own memory).
void set_memory_limit(uint64_t bytes);
uint64_t memory_limit();

// Whether get_device(kCuda) can succeed, without an error when it cannot.
bool cuda_available();
// The GPUs visible to this process (0 without the CUDA plugin or a driver).
int cuda_device_count();
// Whether this build has the CUDA device and kernels (a GPU may still be missing).
bool has_cuda_kernels();
// Whether an NVIDIA driver is loaded here (a GPU may be visible).
bool nvidia_driver_present();
// Why this build has no CUDA plugin and how to get one; "" when it has one.
const char* cuda_plugin_missing_reason();

using DeviceFactory = std::function<Result<std::shared_ptr<Device>>(const DeviceSettings&)>;
struct DeviceRegistrar {
  DeviceRegistrar(DeviceKind kind, DeviceFactory factory, std::function<int()> count);
};

// A copy of `t` on `device` (no copy when it is there already).
Result<Tensor> to_device(Device& device, const Tensor& t);
// A host copy of `t` (no copy when it is on the host already).
Result<Tensor> to_host(Device& device, const Tensor& t);

}  // namespace ort_train
