#include "runtime/device_choice.h"

#include <spdlog/spdlog.h>

#include "runtime/execution_plan.h"

namespace ort_train {

Result<std::shared_ptr<Device>> choose_device(const std::string& requested, DeviceSettings settings,
                                              const Model& model) {
  if (requested == "cpu") return get_device(DeviceKind::kCpu, settings);
  if (requested.empty()) {
    if (cuda_available()) {
      Status kernels = check_kernels(model, DeviceKind::kCuda);
      if (kernels.ok()) return get_device(DeviceKind::kCuda, settings);
      spdlog::warn("running on the CPU: {}", kernels.message());
    } else if (nvidia_driver_present() && *cuda_plugin_missing_reason()) {
      spdlog::warn("running on the CPU although an NVIDIA driver is loaded: this build has no CUDA plugin: {}",
                   cuda_plugin_missing_reason());
    }
    return get_device(DeviceKind::kCpu, settings);
  }
  if (requested != "cuda" && requested.rfind("cuda:", 0) != 0)
    return invalid_argument("device '{}': expected cpu, cuda or cuda:i", requested);
  if (requested.size() > 5) {
    const std::string digits = requested.substr(5);
    if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos)
      return invalid_argument("device '{}': expected cpu, cuda or cuda:i", requested);
    settings.index = std::stoi(digits);
  }
  // The device first: on a machine without one, that is the error (exit 4).
  ASSIGN_OR_RETURN(std::shared_ptr<Device> gpu, get_device(DeviceKind::kCuda, settings));
  RETURN_IF_ERROR(check_kernels(model, DeviceKind::kCuda));  // every node without a CUDA kernel, named
  return gpu;
}

}  // namespace ort_train
