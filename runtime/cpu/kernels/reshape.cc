// CPU kernels for the view ops: the output shares the input's storage.
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status view(KernelContext& ctx) {
  ctx.alias_output(0, ctx.input(0));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Reshape", 5, 1000, view);
ORT_REGISTER_CPU_KERNEL("Flatten", 1, 1000, view);
ORT_REGISTER_CPU_KERNEL("Squeeze", 1, 1000, view);
ORT_REGISTER_CPU_KERNEL("Unsqueeze", 1, 1000, view);

}  // namespace ort_train
