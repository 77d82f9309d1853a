#include "runtime/device.h"
#include "runtime/plugin_loader.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ort_train {
namespace {

struct Registered {
  DeviceFactory factory;
  std::function<int()> count;
};

std::map<DeviceKind, Registered>& factories() {
  static std::map<DeviceKind, Registered> f;
  return f;
}

// Loads the CUDA plugin once, on first need (commands that never ask for a
// GPU do not load cuBLAS and cuDNN). Returns why it is unavailable ("" when
// loaded or when this build has none).
const std::string& load_cuda_plugin() {
  static std::string why;
  static std::once_flag once;
  std::call_once(once, [] {
    constexpr const char* kPlugin = ORT_TRAIN_CUDA_PLUGIN;  // "" when this build has none (CMakeLists.txt)
    if (!*kPlugin) return;
    spdlog::debug("loading the CUDA plugin {}", kPlugin);
    why = load_plugin(kPlugin, "ORT_TRAIN_CUDA_PLUGIN");
    if (why.find("was not found") != std::string::npos)
      why = std::string("the CUDA plugin ") + kPlugin + " was not found next to the executable";
  });
  return why;
}

}  // namespace

std::shared_ptr<Device> make_cpu_device();  // runtime/cpu/cpu_device.cc

const char* cuda_plugin_missing_reason() { return *ORT_TRAIN_CUDA_PLUGIN ? "" : ORT_TRAIN_NO_CUDA_WHY; }

DeviceRegistrar::DeviceRegistrar(DeviceKind kind, DeviceFactory factory, std::function<int()> count) {
  factories()[kind] = Registered{std::move(factory), std::move(count)};
}

Result<std::shared_ptr<Device>> get_device(DeviceKind kind, const DeviceSettings& settings) {
  static std::mutex mu;
  static std::map<std::pair<DeviceKind, int>, std::shared_ptr<Device>> made;
  std::lock_guard<std::mutex> lock(mu);
  int index = kind == DeviceKind::kCpu ? 0 : settings.index;
  auto it = made.find({kind, index});
  if (it == made.end()) {
    std::shared_ptr<Device> d;
    if (kind == DeviceKind::kCpu) {
      d = make_cpu_device();
    } else {
      const std::string& why = load_cuda_plugin();
      auto f = factories().find(kind);
      if (f == factories().end()) {
        if (!why.empty()) return unavailable("--device cuda: {}; use --device cpu", why);
        return unavailable("this build of ort_train has no CUDA plugin: {}; use --device cpu", ORT_TRAIN_NO_CUDA_WHY);
      }
      ASSIGN_OR_RETURN(d, f->second.factory(settings));
    }
    it = made.emplace(std::make_pair(kind, index), std::move(d)).first;
  }
  it->second->configure(settings);
  return it->second;
}

// Whether an NVIDIA driver is loaded (bare metal, a container given the GPUs,
// or WSL2's /dev/dxg). Without one no GPU can be visible, so choosing the
// default device does not load the CUDA plugin (cuBLAS, cuDNN: about 200 MiB
// and most of a second) only to find none.
bool nvidia_driver_present() {
  for (const char* p : {"/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg"})
    if (::access(p, F_OK) == 0) return true;
  return false;
}

int cuda_device_count() {
  if (!nvidia_driver_present()) return 0;
  load_cuda_plugin();
  auto f = factories().find(DeviceKind::kCuda);
  return f == factories().end() ? 0 : f->second.count();
}

bool cuda_available() { return cuda_device_count() > 0; }

bool has_cuda_kernels() {
  load_cuda_plugin();
  return factories().count(DeviceKind::kCuda) > 0;
}

Result<Tensor> to_device(Device& device, const Tensor& t) {
  if (t.device() == device.kind()) return t;
  Tensor out(t.dtype(), t.dims(), device.make_allocator()->allocate(t.nbytes()));
  RETURN_IF_ERROR(device.copy(t, out));
  return out;
}

Result<Tensor> to_host(Device& device, const Tensor& t) {
  if (t.device() == DeviceKind::kCpu) return t;
  Tensor out = Tensor::host(t.dtype(), t.dims());
  RETURN_IF_ERROR(device.copy(t, out));
  RETURN_IF_ERROR(device.synchronize());
  return out;
}

namespace {
std::atomic<uint64_t> g_memory_limit{0};
}  // namespace

void set_memory_limit(uint64_t bytes) { g_memory_limit = bytes; }
uint64_t memory_limit() { return g_memory_limit; }

uint64_t Device::memory_budget() const {
  uint64_t own = memory_bytes(), limit = g_memory_limit;
  if (limit == 0) return own;
  return own == 0 ? limit : std::min(own, limit);
}

}  // namespace ort_train
