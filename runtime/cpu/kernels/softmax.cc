// CPU kernels: Softmax and LogSoftmax, numerically stable (max subtracted).
// Before opset 13 the input is coerced to 2-D at `axis` and normalized over
// everything from `axis` on; from 13 on only `axis` is normalized.
#include <cmath>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename T, bool kLog>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  parallel_for(outer * inner, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / inner, i = t % inner;
      const T* xr = x + o * n * inner + i;
      T* yr = y + o * n * inner + i;
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < n; ++k) mx = std::max(mx, xr[k * inner]);
      if (std::isinf(mx) && mx < 0) mx = 0;  // an all -inf row stays -inf/NaN like the reference
      T sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        T ev = std::exp(xr[k * inner] - mx);
        if constexpr (!kLog) yr[k * inner] = ev;
        sum += ev;
      }
      if constexpr (kLog) {
        // (x - max) - log(sum): subtracting max first keeps float precision for large logits.
        T ls = std::log(sum);
        for (int64_t k = 0; k < n; ++k) yr[k * inner] = (xr[k * inner] - mx) - ls;
      } else {
        T inv = T(1) / sum;
        for (int64_t k = 0; k < n; ++k) yr[k * inner] *= inv;
      }
    }
  });
}

template <bool kLog>
Status softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  int64_t rank = x.rank();
  int64_t axis = ctx.node().attr_int("axis", ctx.opset() >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (rank == 0) axis = 0;
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[d];
  if (ctx.opset() >= 13) {
    n = rank ? x.dims()[axis] : 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dims()[d];
  } else {
    for (int64_t d = axis; d < rank; ++d) n *= x.dims()[d];
  }
  if (x.numel() == 0) return Status::Ok();
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() { softmax_rows<T, kLog>(x.data<T>(), out.data<T>(), outer, n, inner); });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL_INPLACE("Softmax", 1, 1000, softmax<false>);
ORT_REGISTER_CPU_KERNEL_INPLACE("LogSoftmax", 1, 1000, softmax<true>);

}  // namespace ort_train
