// CPU kernels: Trilu (keep the upper or lower triangle of the last two dims) and CumSum.
#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  int64_t k = ctx.has_input(1) ? ctx.input(1).to_int64_vector().at(0) : 0;
  bool upper = ctx.node().attr_int("upper", 1) != 0;
  int64_t n = x.dim(-2), m = x.dim(-1);
  int64_t batch = n * m == 0 ? 0 : x.numel() / (n * m);
  bool ok = dispatch_all(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(batch * n, std::max<int64_t>(1, 4096 / std::max<int64_t>(m, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t i = r % n;
        for (int64_t j = 0; j < m; ++j) {
          bool keep = upper ? (j - i >= k) : (j - i <= k);
          dst[r * m + j] = keep ? src[r * m + j] : T(0);
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

Status cumsum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  int64_t axis = ctx.input(1).to_int64_vector().at(0);
  if (axis < -x.rank() || axis >= x.rank())
    return invalid_argument("{}: axis {} out of range for rank {}", ctx.node().describe(), axis, x.rank());
  if (axis < 0) axis += x.rank();
  bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  int64_t n = x.dims()[axis], inner = 1, outer = 1;
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dims()[d];
  for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[d];
  bool ok = dispatch_numeric(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(outer * inner, 256, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / inner, i = t % inner;
        T acc = T(0);
        for (int64_t s = 0; s < n; ++s) {
          int64_t j = reverse ? n - 1 - s : s;
          int64_t off = (o * n + j) * inner + i;
          if (exclusive) {
            dst[off] = acc;
            acc = static_cast<T>(acc + src[off]);
          } else {
            acc = static_cast<T>(acc + src[off]);
            dst[off] = acc;
          }
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Trilu", 14, 1000, trilu);
ORT_REGISTER_CPU_KERNEL("CumSum", 11, 1000, cumsum);

}  // namespace ort_train
