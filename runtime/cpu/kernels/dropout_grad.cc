// CPU kernel of DropoutGrad(dY, mask[, ratio, training_mode]) -> dX: the
// forward's mask and scale, dX = dY * mask / (1 - ratio) when the forward
// dropped, dY otherwise. It decides "dropped" exactly as the forward kernel
// (runtime/cpu/kernels/dropout.cc): from the training_mode input (the forward's
// opset 12+), or, when the node says runtime_training=1 (forward before opset
// 12), from the run's training flag; `ratio` comes from the input or attribute.
#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

double scalar_or(const KernelContext& ctx, size_t i, double def) {
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return def;
  const Tensor& t = ctx.input(i);
  switch (t.dtype()) {
    case DType::kFloat: return t.data<float>()[0];
    case DType::kDouble: return t.data<double>()[0];
    case DType::kBool: return t.data<bool>()[0] ? 1.0 : 0.0;
    default: return def;
  }
}

Status dropout_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const bool* mask = ctx.input(1).data<bool>();
  bool runtime_training = ctx.node().attr_int("runtime_training", 0) != 0;
  double ratio = runtime_training ? ctx.node().attr_float("ratio", 0.5f) : scalar_or(ctx, 2, 0.5);
  bool training = runtime_training ? ctx.options().training : scalar_or(ctx, 3, 0.0) != 0.0;
  double scale = training && ratio > 0.0 ? 1.0 / (1.0 - ratio) : 1.0;
  bool ok = dispatch_float(dY.dtype(), [&]<typename T>() {
    const T* g = dY.data<T>();
    T* o = ctx.output(0).data<T>();
    T s = static_cast<T>(scale);
    parallel_for(dY.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = mask[i] ? g[i] * s : T(0);
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dY.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "DropoutGrad", 1, 1000, DeviceKind::kCpu, dropout_grad);

}  // namespace ort_train
