// CPU kernel of TopK: per line along the axis, the k largest (or smallest)
// values, always sorted, ties broken by the lower index (as ONNX's reference);
// NaN counts as larger than any number.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status topk(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& values = ctx.output(0);
  int64_t rank = x.rank();
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (axis < 0) axis += rank;
  bool largest = ctx.node().attr_int("largest", 1) != 0;
  int64_t n = x.dims()[axis], k = values.dims()[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dims()[d];
  int64_t* out_idx = ctx.has_output(1) ? ctx.output(1).data<int64_t>() : nullptr;
  bool ok = dispatch_numeric(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    parallel_for(outer * inner, 16, [&](int64_t b, int64_t e) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t t = b; t < e; ++t) {
        int64_t o = t / inner, i = t % inner;
        const T* line = xp + o * n * inner + i;
        auto key = [&](int64_t j) { return line[j * inner]; };
        auto before = [&](int64_t a, int64_t c) {
          T va = key(a), vc = key(c);
          bool na = va != va, nc = vc != vc;  // NaN sorts as the largest value
          if (na || nc) {
            if (na && nc) return a < c;
            return largest ? na : nc;
          }
          if (va != vc) return largest ? va > vc : va < vc;
          return a < c;
        };
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          int64_t dst = o * k * inner + j * inner + i;
          vp[dst] = key(order[j]);
          if (out_idx) out_idx[dst] = order[j];
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("TopK", 1, 1000, topk);

}  // namespace ort_train
