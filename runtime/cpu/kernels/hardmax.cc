// CPU kernel of Hardmax: 1 at the first maximum of each row along the axis
// (numerics/arg_reduce.h's comparison, ArgMax's), 0 elsewhere. Before opset 13
// the input is seen as 2-D, [prod(dims before axis), prod(dims from axis)].
#include "graph/dispatch.h"
#include "graph/ops/hardmax.h"
#include "numerics/arg_reduce.h"
#include "runtime/kernel.h"

namespace ort_train {

namespace {

Status hardmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(auto view, hardmax_view(ctx.node(), ctx.opset(), x.dims()));
  const int64_t outer = view[0], n = view[1], inner = view[2];
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    T* o = ctx.output(0).data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = T(0);
    for (int64_t r = 0; r < outer * inner; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      int64_t best = 0;
      for (int64_t i = 1; i < n; ++i)
        if (arg_reduce_replaces(p[base + i * inner], p[base + best * inner], true, false)) best = i;
      if (n > 0) o[base + best * inner] = T(1);
    }
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Hardmax", 1, 1000, hardmax);

}  // namespace ort_train
