// CPU kernel of com.ort_train::SumTo (shape rule in graph/ops/sum_to.cc).
#include "graph/ops/reduce.h"
#include "runtime/cpu/kernels/reduce.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status sum_to(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Dims target = dims_from_shape(*ctx.shapes().output(0).shape);
  if (target == x.dims()) {
    ctx.alias_output(0, x);
    return Status::Ok();
  }
  return sum_axes(x, sum_to_axes(x.dims(), target), ctx.output(0)) ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "SumTo", 1, 1000, DeviceKind::kCpu, sum_to);

}  // namespace ort_train
