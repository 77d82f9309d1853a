// If, Loop and Scan on the CPU: the device-generic kernels of
// runtime/control_flow_kernels.h.
#include "runtime/control_flow_kernels.h"

namespace ort_train {
namespace {

Status if_cpu(KernelContext& ctx) { return if_kernel(ctx, DeviceKind::kCpu); }
Status loop_cpu(KernelContext& ctx) { return loop_kernel(ctx, DeviceKind::kCpu); }
Status scan_cpu(KernelContext& ctx) { return scan_kernel(ctx, DeviceKind::kCpu); }

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "If", 1, 1000, DeviceKind::kCpu, if_cpu, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "Loop", 1, 1000, DeviceKind::kCpu, loop_cpu, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "Scan", 1, 1000, DeviceKind::kCpu, scan_cpu, all_stored_dtypes());

}  // namespace ort_train
