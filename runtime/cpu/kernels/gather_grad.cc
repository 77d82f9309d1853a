// CPU kernel of GatherGrad(dY, shape, indices) -> dX (attribute axis): zeros of
// `shape` into which each gathered slice of dY is added back at its index, so
// repeated indices (a token used twice) accumulate. Parallel over the slice's
// columns when the leading dims are few (an embedding table: one row per
// token), over the leading dims otherwise; either way no two threads add into
// the same element, and each sum is taken in index order (deterministic).
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/index_fault_error.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status gather_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  std::vector<int64_t> idx = ctx.input(2).to_int64_vector();
  Tensor& dx = ctx.output(0);
  int64_t rank = dx.rank();
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1, n = dx.dims()[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= dx.dims()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= dx.dims()[d];
  int64_t m = static_cast<int64_t>(idx.size());
  RETURN_IF_ERROR(wrap_axis_indices(ctx.node(), idx, n));
  if (dy.numel() != outer * m * inner)
    return shape_error("{}: dY has {} elements, expected {}", ctx.node().describe(), dy.numel(), outer * m * inner);
  std::memset(dx.raw(), 0, dx.nbytes());
  bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
    const T* g = dy.data<T>();
    T* out = dx.data<T>();
    auto add_rows = [&](int64_t o, int64_t c0, int64_t c1) {
      for (int64_t j = 0; j < m; ++j) {
        const T* src = g + (o * m + j) * inner;
        T* dst = out + (o * n + idx[static_cast<size_t>(j)]) * inner;
        for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
      }
    };
    if (outer >= cpu_threads()) {
      parallel_for(outer, 1, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) add_rows(o, 0, inner);
      });
    } else {
      for (int64_t o = 0; o < outer; ++o)
        parallel_for(inner, 256, [&](int64_t b, int64_t e) { add_rows(o, b, e); });
    }
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dy.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "GatherGrad", 1, 1000, DeviceKind::kCpu, gather_grad);

}  // namespace ort_train
