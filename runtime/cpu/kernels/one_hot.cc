// CPU kernels of OneHot and EyeLike.
#include <cstring>

#include "graph/dispatch.h"
#include "numerics/index_ops.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// OneHot: the output as [outer, depth, inner] around the axis; each index of
// [outer, inner] turns on one position (none when out of range).
Status one_hot(KernelContext& ctx) {
  const Tensor& idx = ctx.input(0);
  const Tensor& values = ctx.input(2);
  Tensor& out = ctx.output(0);
  if (values.numel() != 2) return shape_error("{}: values must hold [off, on]", ctx.node().describe());
  const int64_t depth = static_cast<int64_t>(ctx.input(1).to_double_vector()[0]);
  const int64_t rank = out.rank();
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", -1), rank, ctx.node()));
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out.dims()[static_cast<size_t>(d)];
  const std::vector<int64_t> indices = idx.to_int64_vector();
  bool ok = dispatch_all(out.dtype(), [&]<typename T>() {
    const T off = values.data<T>()[0], on = values.data<T>()[1];
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = off;
    for (int64_t k = 0; k < static_cast<int64_t>(indices.size()); ++k) {
      const int64_t pos = one_hot_position(indices[static_cast<size_t>(k)], depth);
      if (pos >= 0) o[((k / inner) * depth + pos) * inner + k % inner] = on;
    }
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, out.dtype());
}

// EyeLike: ones on the k-th diagonal of a 2-D output, zeros elsewhere.
Status eye_like(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  if (out.rank() != 2) return shape_error("{}: EyeLike takes a 2-D input", ctx.node().describe());
  const int64_t rows = out.dims()[0], cols = out.dims()[1], k = ctx.node().attr_int("k", 0);
  bool ok = dispatch_all(out.dtype(), [&]<typename T>() {
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = T(0);
    for (int64_t r = 0; r < rows; ++r)
      if (r + k >= 0 && r + k < cols) o[r * cols + r + k] = T(1);
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, out.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("OneHot", 9, 1000, one_hot);
ORT_REGISTER_CPU_KERNEL("EyeLike", 9, 1000, eye_like);

}  // namespace ort_train
