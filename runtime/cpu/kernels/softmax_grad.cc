// CPU kernels of the softmax gradients, over the forward's normalized extent:
// the `axis` dim (coerce_2d = 0, opset 13+), or every dim from `axis` on
// (coerce_2d = 1, the forward's opset < 13 semantics).
//   SoftmaxGrad(dY, Y)     dX = Y * (dY - sum(dY * Y))
//   LogSoftmaxGrad(dY, Y)  dX = dY - exp(Y) * sum(dY)
#include <cmath>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <bool kLog>
Status softmax_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& y = ctx.input(1);
  int64_t rank = dy.rank();
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (axis < 0) axis += rank;
  axis = std::clamp<int64_t>(axis, 0, rank);
  bool coerce = ctx.node().attr_int("coerce_2d", 0) != 0;
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dy.dims()[d];
  if (coerce) {
    for (int64_t d = axis; d < rank; ++d) n *= dy.dims()[d];
  } else {
    n = axis < rank ? dy.dims()[axis] : 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= dy.dims()[d];
  }
  bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
    const T* g = dy.data<T>();
    const T* v = y.data<T>();
    T* o = ctx.output(0).data<T>();
    parallel_for(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t base = (t / inner) * n * inner + t % inner;
        double s = 0;
        for (int64_t k = 0; k < n; ++k) {
          int64_t i = base + k * inner;
          s += kLog ? static_cast<double>(g[i]) : static_cast<double>(g[i]) * static_cast<double>(v[i]);
        }
        for (int64_t k = 0; k < n; ++k) {
          int64_t i = base + k * inner;
          if constexpr (kLog) o[i] = static_cast<T>(static_cast<double>(g[i]) - std::exp(static_cast<double>(v[i])) * s);
          else o[i] = static_cast<T>(static_cast<double>(v[i]) * (static_cast<double>(g[i]) - s));
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dy.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "SoftmaxGrad", 1, 1000, DeviceKind::kCpu, softmax_grad<false>);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "LogSoftmaxGrad", 1, 1000, DeviceKind::kCpu, softmax_grad<true>);

}  // namespace ort_train
