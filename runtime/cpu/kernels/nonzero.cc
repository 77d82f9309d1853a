// CPU kernel of NonZero: coordinates of the nonzero elements, one row per
// dimension, in row-major order (as numpy.nonzero). Its output size came from
// the shape rule, which counted them over the same value.
#include "graph/dispatch.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status nonzero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const int64_t rank = x.rank(), n = rank > 0 ? out.dims()[1] : out.numel();
  int64_t* o = out.data<int64_t>();
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t k = 0;
  bool ok = dispatch_all(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (p[i] != T(0)) {
        if (k >= n) break;
        for (int64_t d = 0; d < rank; ++d) o[d * n + k] = index[static_cast<size_t>(d)];
        ++k;
      }
      for (int64_t d = rank - 1; d >= 0; --d) {  // the next row-major coordinate
        if (++index[static_cast<size_t>(d)] < x.dims()[static_cast<size_t>(d)]) break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
  });
  if (!ok) return unsupported_dtype(ctx, x.dtype());
  if (k != n) return invalid_argument("{}: {} nonzero elements, the shape rule counted {}", ctx.node().describe(), k, n);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("NonZero", 9, 1000, nonzero);

}  // namespace ort_train
