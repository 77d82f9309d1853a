// CPU kernels: Gather (rows of contiguous blocks; embedding lookups are the hot
// case) and GatherElements. Negative indices count from the end; out-of-range
// indices are an error naming the node, never a silent read.
#include <algorithm>

#include "graph/dispatch.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/parallel.h"
#include "runtime/index_fault_error.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// The indices as int64 with negatives wrapped, or an error for one outside [-n, n).
Result<std::vector<int64_t>> wrapped_indices(const KernelContext& ctx, const Tensor& indices, int64_t n) {
  std::vector<int64_t> idx = indices.to_int64_vector();
  RETURN_IF_ERROR(wrap_axis_indices(ctx.node(), idx, n));
  return idx;
}

Status gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& out = ctx.output(0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += data.rank();
  int64_t outer = 1, inner = 1, n = data.dims()[axis];
  for (int64_t i = 0; i < axis; ++i) outer *= data.dims()[i];
  for (int64_t i = axis + 1; i < data.rank(); ++i) inner *= data.dims()[i];
  ASSIGN_OR_RETURN(auto idx, wrapped_indices(ctx, ctx.input(1), n));
  int64_t k = static_cast<int64_t>(idx.size());
  bool ok = dispatch_all(data.dtype(), [&]<typename T>() {
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    parallel_for(outer * k, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t t = b; t < e; ++t)
                     std::copy_n(src + (t / k * n + idx[t % k]) * inner, inner, dst + t * inner);
                 });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, data.dtype());
}

// Walks the indices row by row (their last dim); a row's data offset comes from its
// coordinates off the axis, and each element adds its index times the axis stride.
Status gather_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  int64_t rank = data.rank();
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += rank;
  ASSIGN_OR_RETURN(auto idx, wrapped_indices(ctx, indices, data.dims()[axis]));
  if (idx.empty()) return Status::Ok();
  const Dims& id = indices.dims();
  std::vector<int64_t> stride = contiguous_strides(data.dims());
  int64_t axis_stride = stride[axis];
  stride[axis] = 0;  // the index replaces the coordinate along the axis
  int64_t inner = id.back(), rows = static_cast<int64_t>(idx.size()) / inner;
  int64_t inner_stride = stride[rank - 1];
  bool ok = dispatch_all(data.dtype(), [&]<typename T>() {
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / inner), [&](int64_t b, int64_t e) {
      std::vector<int64_t> pos(static_cast<size_t>(rank), 0);
      int64_t base = 0, rem = b;
      for (int64_t d = rank - 2; d >= 0; --d) {
        pos[d] = rem % id[d];
        rem /= id[d];
        base += pos[d] * stride[d];
      }
      for (int64_t r = b; r < e; ++r) {
        const int64_t* ix = idx.data() + r * inner;
        T* o = dst + r * inner;
        for (int64_t j = 0; j < inner; ++j) o[j] = src[base + j * inner_stride + ix[j] * axis_stride];
        for (int64_t d = rank - 2; d >= 0; --d) {
          base += stride[d];
          if (++pos[d] < id[d]) break;
          base -= stride[d] * id[d];
          pos[d] = 0;
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, data.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Gather", 1, 1000, gather);
ORT_REGISTER_CPU_KERNEL("GatherElements", 11, 1000, gather_elements);

}  // namespace ort_train
