// CPU kernel of ResizeGrad(dY, shape[, scales[, sizes[, roi]]]) -> dX with the forward Resize's
// attributes (and its opset as attribute `forward_opset`): each output
// gradient is added back to the taps it was interpolated from.
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/kernels/resize_common.h"

namespace ort_train {
namespace {

Status resize_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  Tensor& dx = ctx.output(0);
  const Tensor* scales = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* sizes = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
  int64_t opset = ctx.node().attr_int("forward_opset", 19);
  const Tensor* roi = ctx.num_inputs() > 4 && ctx.has_input(4) ? &ctx.input(4) : nullptr;
  std::vector<std::vector<ResizeTap>> plan;
  RETURN_IF_ERROR(resize_plan(ctx.node(), opset, dx.dims(), dy.dims(), scales, sizes, roi, plan));
  std::memset(dx.raw(), 0, dx.nbytes());
  bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
    const T* g = dy.data<T>();
    T* o = dx.data<T>();
    for_each_resize_tap(dx.dims(), dy.dims(), plan,
                        [&](int64_t p, int64_t off, double w) { o[off] += static_cast<T>(w * g[p]); },
                        [](int64_t) {});  // an extrapolated element reads no input
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dy.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "ResizeGrad", 1, 1000, DeviceKind::kCpu, resize_grad);

}  // namespace ort_train
