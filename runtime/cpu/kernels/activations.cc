// CPU kernels of the parameterised activations, the trigonometric/hyperbolic
// functions and their gradient op ActivationGrad(dY, X) = dY * f'(X): one map
// over numerics/activations.h, the arithmetic the CUDA kernels run too. PRelu
// broadcasts its slope through runtime/cpu/broadcast.h.
#include "graph/dispatch.h"
#include "graph/ops/activations.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename F>
bool dispatch_for(Activation op, DType t, F&& f) {
  return activation_takes_integers(op) ? dispatch_numeric(t, f) : dispatch_float(t, f);
}

Status activation(KernelContext& ctx) {
  ASSIGN_OR_RETURN(ActivationCall call, activation_call(ctx.node(), ctx.node().op_type));
  const Tensor& x = ctx.input(0);
  bool ok = dispatch_for(call.op, x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    T* o = ctx.output(0).data<T>();
    parallel_for(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = activation_value<T>(call.op, p[i], call.params);
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

Status activation_grad(KernelContext& ctx) {
  ASSIGN_OR_RETURN(ActivationCall call, activation_grad_call(ctx.node()));
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (x.dims() != dy.dims() || x.dtype() != dy.dtype())
    return shape_error("{}: dY and X differ in shape or dtype", ctx.node().describe());
  bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
    const T* g = dy.data<T>();
    const T* v = x.data<T>();
    T* o = ctx.output(0).data<T>();
    parallel_for(dy.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = g[i] * activation_derivative<T>(call.op, v[i], call.params);
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dy.dtype());
}

Status prelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  if (slope.dtype() != x.dtype()) return unsupported_dtype(ctx, slope.dtype());
  Tensor& out = ctx.output(0);
  bool ok = dispatch_numeric(x.dtype(), [&]<typename T>() {
    const T* px = x.data<T>();
    const T* ps = slope.data<T>();
    T* po = out.data<T>();
    auto plan = make_broadcast_plan<2>(out.dims(), {&x.dims(), &slope.dims()});
    for_each_broadcast_run(plan, [&](int64_t o, const std::array<int64_t, 2>& off, int64_t n) {
      const int64_t sx = plan.inner_step[0], ss = plan.inner_step[1];
      for (int64_t i = 0; i < n; ++i) po[o + i] = prelu_value<T>(px[off[0] + i * sx], ps[off[1] + i * ss]);
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL_INPLACE("HardSigmoid", 6, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("HardSwish", 14, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Elu", 6, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Selu", 6, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Celu", 12, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("ThresholdedRelu", 10, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Shrink", 9, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Softsign", 1, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Mish", 18, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Tan", 7, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Sinh", 9, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Cosh", 9, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Asin", 7, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Acos", 7, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Asinh", 9, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Acosh", 9, 1000, activation);
ORT_REGISTER_CPU_KERNEL_INPLACE("Atanh", 9, 1000, activation);
ORT_REGISTER_CPU_KERNEL("PRelu", 7, 1000, prelu);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "ActivationGrad", 1, 1000, DeviceKind::kCpu, activation_grad);

}  // namespace ort_train
