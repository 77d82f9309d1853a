// If, Loop and Scan on the CPU: the device-generic kernels of
// runtime/control_flow_kernels.h.
#include "runtime/control_flow_kernels.h"

namespace ort_train {

ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "If", 1, 1000, DeviceKind::kCpu, if_kernel, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "Loop", 1, 1000, DeviceKind::kCpu, loop_kernel, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "Scan", 1, 1000, DeviceKind::kCpu, scan_kernel, all_stored_dtypes());

}  // namespace ort_train
