// CPU kernels of IsNaN and IsInf (numerics/is_nan_inf.h's test, the CUDA kernel's too).
#include "graph/dispatch.h"
#include "numerics/is_nan_inf.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

KernelFn float_class(bool nan) {
  return [nan](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    const bool neg = ctx.node().attr_int("detect_negative", 1) != 0, pos = ctx.node().attr_int("detect_positive", 1) != 0;
    bool* o = ctx.output(0).data<bool>();
    bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
      const T* p = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = float_class_test(p[i], nan, neg, pos);
    });
    return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
  };
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("IsNaN", 9, 1000, float_class(true));
ORT_REGISTER_CPU_KERNEL("IsInf", 10, 1000, float_class(false));

}  // namespace ort_train
