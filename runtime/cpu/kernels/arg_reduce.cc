// CPU kernels of ArgMax and ArgMin: the input viewed as [outer, n, inner]
// around the axis, one int64 index per (outer, inner); the comparison is
// numerics/arg_reduce.h's, the CUDA kernel's too.
#include "graph/dispatch.h"
#include "numerics/arg_reduce.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

KernelFn arg_reduce(bool is_max) {
  return [is_max](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    const int64_t rank = static_cast<int64_t>(x.dims().size());
    if (rank == 0) return invalid_argument("{}: needs an input of rank >= 1", ctx.node().describe());
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), rank, ctx.node()));
    const bool select_last = ctx.node().attr_int("select_last_index", 0) != 0;
    const int64_t n = x.dims()[static_cast<size_t>(axis)];
    if (n == 0 && x.numel() == 0 && ctx.output(0).numel() > 0)
      return invalid_argument("{}: cannot take the {} of an empty axis", ctx.node().describe(), ctx.node().op_type);
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dims()[static_cast<size_t>(d)];
    const int64_t outer = n == 0 ? 0 : x.numel() / (n * inner);
    int64_t* out = ctx.output(0).data<int64_t>();
    bool ok = dispatch_numeric(x.dtype(), [&]<typename T>() {
      const T* p = x.data<T>();
      parallel_for(outer * inner, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t r = b; r < e; ++r) {
                       const T* row = p + (r / inner) * n * inner + r % inner;
                       int64_t best = 0;
                       for (int64_t i = 1; i < n; ++i)
                         if (arg_reduce_replaces(row[i * inner], row[best * inner], is_max, select_last)) best = i;
                       out[r] = best;
                     }
                   });
    });
    return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
  };
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("ArgMax", 1, 1000, arg_reduce(true));
ORT_REGISTER_CPU_KERNEL("ArgMin", 1, 1000, arg_reduce(false));

}  // namespace ort_train
