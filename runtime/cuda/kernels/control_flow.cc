// If, Loop and Scan on a GPU: the device-generic kernels of
// runtime/control_flow_kernels.h, whose subgraphs run on the GPU too. The
// condition and trip count are read on the host each trip (one wait for the
// stream per decision); nothing here is GPU arithmetic of its own.
#include "runtime/control_flow_kernels.h"
#include "runtime/cuda/cuda_kernel.h"

namespace ort_train {

ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "If", 1, 1000, DeviceKind::kCuda, if_kernel, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "Loop", 1, 1000, DeviceKind::kCuda, loop_kernel, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "Scan", 1, 1000, DeviceKind::kCuda, scan_kernel, all_stored_dtypes());

}  // namespace ort_train
