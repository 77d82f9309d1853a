// CPU kernels for the view ops: the output shares the input's storage, so
// they take every stored dtype, float16 and bfloat16 included.
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status view(KernelContext& ctx) {
  ctx.alias_output(0, ctx.input(0));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES("", "Reshape", 5, 1000, DeviceKind::kCpu, view, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Flatten", 1, 1000, DeviceKind::kCpu, view, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Squeeze", 1, 1000, DeviceKind::kCpu, view, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Unsqueeze", 1, 1000, DeviceKind::kCpu, view, all_stored_dtypes());

}  // namespace ort_train
