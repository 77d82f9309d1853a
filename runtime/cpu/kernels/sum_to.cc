// CPU kernel of com.ort_train::SumTo (shape rule in graph/ops/sum_to.cc).
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
  size_t lead = x.dims().size() - target.size();
  std::vector<bool> reduced(x.dims().size(), true);
  for (size_t i = 0; i < target.size(); ++i) reduced[lead + i] = target[i] == 1 && x.dims()[lead + i] != 1;
  return sum_axes(x, reduced, ctx.output(0)) ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "SumTo", 1, 1000, DeviceKind::kCpu, sum_to);

}  // namespace ort_train
