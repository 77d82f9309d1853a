// CPU kernels: Trilu (keep the upper or lower triangle of the last two dims) and
// CumSum. Both work on contiguous runs: a Trilu row is one run kept and one zeroed;
// CumSum adds whole rows along the axis, so its inner loop vectorizes.
#include <algorithm>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  int64_t n = x.dim(-2), m = x.dim(-1);
  if (x.numel() == 0) return Status::Ok();
  // Beyond [-n, m] every k keeps all or nothing; bounding it keeps i + k from overflowing.
  int64_t k = ctx.has_input(1) ? std::clamp<int64_t>(ctx.input(1).to_int64_vector()[0], -n, m) : 0;
  bool upper = ctx.node().attr_int("upper", 1) != 0;
  int64_t rows = x.numel() / m;
  bool ok = dispatch_all(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / m), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        // Upper keeps columns j >= i + k; lower keeps j <= i + k.
        int64_t i = r % n, split = std::clamp<int64_t>(upper ? i + k : i + k + 1, 0, m);
        const T* s = src + r * m;
        T* d = dst + r * m;
        if (upper) {
          std::fill(d, d + split, T(0));
          std::copy(s + split, s + m, d + split);
        } else {
          std::copy(s, s + split, d);
          std::fill(d + split, d + m, T(0));
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

Status cumsum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  int64_t axis = ctx.input(1).to_int64_vector()[0];
  if (axis < 0) axis += x.rank();
  bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  int64_t n = x.dims()[axis], inner = 1, outer = 1;
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dims()[d];
  for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[d];
  if (x.numel() == 0) return Status::Ok();
  // Tasks are (outer index, block of the inner dims); each scans its block along the axis.
  int64_t block = std::min<int64_t>(inner, 4096), blocks = (inner + block - 1) / block;
  bool ok = dispatch_numeric(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(outer * blocks, std::max<int64_t>(1, kElementwiseGrain / (n * block)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / blocks, i0 = t % blocks * block, len = std::min(block, inner - i0);
        auto row = [&](int64_t s) { return (o * n + (reverse ? n - 1 - s : s)) * inner + i0; };
        T* first = dst + row(0);
        if (exclusive) std::fill(first, first + len, T(0));
        else std::copy(src + row(0), src + row(0) + len, first);
        for (int64_t s = 1; s < n; ++s) {
          const T* prev = dst + row(s - 1);
          const T* add = src + row(exclusive ? s - 1 : s);
          T* cur = dst + row(s);
          for (int64_t i = 0; i < len; ++i) cur[i] = static_cast<T>(prev[i] + add[i]);
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
