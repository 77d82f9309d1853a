// CPU kernel of Resize (nearest, N-linear, cubic, antialias, tf_crop_and_resize;
// see runtime/cpu/resize_taps.h).
// Each output element is the weighted sum of its taps; sequential per tensor.
#include "graph/dispatch.h"
#include "runtime/cpu/kernels/resize_common.h"

namespace ort_train {
namespace {

Status resize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  size_t scales_at = ctx.opset() >= 11 ? 2 : 1;
  const Tensor* scales = ctx.has_input(scales_at) ? &ctx.input(scales_at) : nullptr;
  const Tensor* sizes = ctx.opset() >= 11 && ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const Tensor* roi = ctx.opset() >= 11 && ctx.has_input(1) ? &ctx.input(1) : nullptr;
  std::vector<std::vector<ResizeTap>> plan;
  RETURN_IF_ERROR(resize_plan(ctx.node(), ctx.opset(), x.dims(), y.dims(), scales, sizes, roi, plan));
  const double extrapolation = ctx.node().attr_float("extrapolation_value", 0.f);
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
    for_each_resize_tap(x.dims(), y.dims(), plan,
                        [&](int64_t p, int64_t off, double w) { acc[static_cast<size_t>(p)] += w * xp[off]; },
                        [&](int64_t p) { acc[static_cast<size_t>(p)] = extrapolation; });
    for (int64_t p = 0; p < y.numel(); ++p) yp[p] = static_cast<T>(acc[static_cast<size_t>(p)]);
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Resize", 10, 1000, resize);

}  // namespace ort_train
