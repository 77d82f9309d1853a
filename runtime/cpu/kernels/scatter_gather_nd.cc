// CPU kernels: ScatterElements/Scatter, ScatterND (reduction none, add, mul,
// max, min) and GatherND (batch_dims). Sequential over the indices, in order,
// so repeated indices reduce in a fixed order (deterministic); every index is
// bounds-checked with an error naming the node.
#include <algorithm>
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/copy.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename T>
void combine(T& dst, T v, const std::string& reduction) {
  if (reduction == "add") dst = static_cast<T>(dst + v);
  else if (reduction == "mul") dst = static_cast<T>(dst * v);
  else if (reduction == "max") dst = std::max(dst, v);
  else if (reduction == "min") dst = std::min(dst, v);
  else dst = v;
}

Status check_reduction(const KernelContext& ctx, const std::string& r) {
  if (r == "none" || r == "add" || r == "mul" || r == "max" || r == "min") return Status::Ok();
  return invalid_argument("{}: unknown reduction '{}'", ctx.node().describe(), r);
}

Status scatter_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  std::vector<int64_t> idx = ctx.input(1).to_int64_vector();
  const Tensor& upd = ctx.input(2);
  Tensor& out = ctx.output(0);
  std::string reduction = ctx.node().attr_string("reduction", "none");
  RETURN_IF_ERROR(check_reduction(ctx, reduction));
  int64_t rank = data.rank();
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (upd.dims() != ctx.input(1).dims())
    return shape_error("{}: updates and indices differ in shape", ctx.node().describe());
  std::memcpy(out.raw(), data.raw(), data.nbytes());
  std::vector<int64_t> ds = contiguous_strides(data.dims());
  Status st;
  bool ok = dispatch_all(data.dtype(), [&]<typename T>() {
    const T* u = upd.data<T>();
    T* o = out.data<T>();
    std::vector<int64_t> pos(static_cast<size_t>(rank), 0);
    for (int64_t i = 0; i < upd.numel(); ++i) {
      int64_t j = idx[static_cast<size_t>(i)], n = data.dims()[axis];
      if (j < -n || j >= n) {
        st = invalid_argument("{}: index {} out of range for axis of size {}", ctx.node().describe(), j, n);
        return;
      }
      if (j < 0) j += n;
      int64_t off = 0;
      for (int64_t d = 0; d < rank; ++d) off += (d == axis ? j : pos[d]) * ds[d];
      if constexpr (std::is_same_v<T, bool>) o[off] = u[i];
      else combine(o[off], u[i], reduction);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++pos[d] < upd.dims()[d]) break;
        pos[d] = 0;
      }
    }
  });
  if (!ok) return unsupported_dtype(ctx, data.dtype());
  return st;
}

// Offset of the block an index tuple addresses, or an error.
Result<int64_t> tuple_offset(const KernelContext& ctx, const Dims& dims, const std::vector<int64_t>& strides,
                             const int64_t* tuple, int64_t k, int64_t first_dim) {
  int64_t off = 0;
  for (int64_t d = 0; d < k; ++d) {
    int64_t n = dims[first_dim + d], j = tuple[d];
    if (j < -n || j >= n)
      return invalid_argument("{}: index {} out of range for dim of size {}", ctx.node().describe(), j, n);
    off += (j < 0 ? j + n : j) * strides[first_dim + d];
  }
  return off;
}

Status scatter_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  std::vector<int64_t> idx = ctx.input(1).to_int64_vector();
  const Tensor& upd = ctx.input(2);
  Tensor& out = ctx.output(0);
  std::string reduction = ctx.node().attr_string("reduction", "none");
  RETURN_IF_ERROR(check_reduction(ctx, reduction));
  const Dims& id = ctx.input(1).dims();
  int64_t k = id.empty() ? 0 : id.back();
  int64_t tuples = k == 0 ? 0 : static_cast<int64_t>(idx.size()) / k;
  int64_t block = 1;
  for (int64_t d = k; d < data.rank(); ++d) block *= data.dims()[d];
  if (upd.numel() != tuples * block) return shape_error("{}: updates do not match indices", ctx.node().describe());
  std::memcpy(out.raw(), data.raw(), data.nbytes());
  std::vector<int64_t> ds = contiguous_strides(data.dims());
  Status st;
  bool ok = dispatch_all(data.dtype(), [&]<typename T>() {
    const T* u = upd.data<T>();
    T* o = out.data<T>();
    for (int64_t t = 0; t < tuples && st.ok(); ++t) {
      auto off = tuple_offset(ctx, data.dims(), ds, idx.data() + t * k, k, 0);
      if (!off.ok()) {
        st = off.status();
        return;
      }
      for (int64_t e = 0; e < block; ++e) {
        if constexpr (std::is_same_v<T, bool>) o[*off + e] = u[t * block + e];
        else combine(o[*off + e], u[t * block + e], reduction);
      }
    }
  });
  if (!ok) return unsupported_dtype(ctx, data.dtype());
  return st;
}

Status gather_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  std::vector<int64_t> idx = ctx.input(1).to_int64_vector();
  const Dims& id = ctx.input(1).dims();
  Tensor& out = ctx.output(0);
  int64_t b = ctx.node().attr_int("batch_dims", 0), k = id.back();
  int64_t batches = 1, block = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data.dims()[d];
  for (int64_t d = b + k; d < data.rank(); ++d) block *= data.dims()[d];
  int64_t tuples_per_batch = batches == 0 || k == 0 ? 0 : static_cast<int64_t>(idx.size()) / k / batches;
  int64_t batch_stride = 1;
  for (int64_t d = b; d < data.rank(); ++d) batch_stride *= data.dims()[d];
  std::vector<int64_t> ds = contiguous_strides(data.dims());
  size_t es = dtype_size(data.dtype());
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t t = 0; t < tuples_per_batch; ++t) {
      ASSIGN_OR_RETURN(int64_t off, tuple_offset(ctx, data.dims(), ds, idx.data() + (bt * tuples_per_batch + t) * k, k, b));
      std::memcpy(dst + ((bt * tuples_per_batch + t) * block) * static_cast<int64_t>(es),
                  src + (bt * batch_stride + off) * static_cast<int64_t>(es), static_cast<size_t>(block) * es);
    }
  return Status::Ok();
}

// GatherNDGrad(shape, indices, dY), attribute batch_dims: zeros of `shape`, then
// each index tuple's dY block added where GatherND read it, tuples in order
// (repeated tuples accumulate, the same sum on every run).
Status gather_nd_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(2);
  std::vector<int64_t> idx = ctx.input(1).to_int64_vector();
  const Dims& id = ctx.input(1).dims();
  Tensor& out = ctx.output(0);
  const Dims& dims = out.dims();
  int64_t b = ctx.node().attr_int("batch_dims", 0), k = id.empty() ? 0 : id.back();
  if (b < 0 || b + k > out.rank()) return shape_error("{}: indices do not fit the shape", ctx.node().describe());
  int64_t batches = 1, block = 1, batch_stride = 1;
  for (int64_t d = 0; d < b; ++d) batches *= dims[d];
  for (int64_t d = b + k; d < out.rank(); ++d) block *= dims[d];
  for (int64_t d = b; d < out.rank(); ++d) batch_stride *= dims[d];
  int64_t tuples_per_batch = batches == 0 || k == 0 ? 0 : static_cast<int64_t>(idx.size()) / k / batches;
  if (dy.numel() != batches * tuples_per_batch * block)
    return shape_error("{}: dY has {} elements, the indices address {}", ctx.node().describe(), dy.numel(),
                       batches * tuples_per_batch * block);
  std::vector<int64_t> ds = contiguous_strides(dims);
  Status st;
  bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
    T* o = out.data<T>();
    const T* g = dy.data<T>();
    std::fill(o, o + out.numel(), T(0));
    for (int64_t bt = 0; bt < batches && st.ok(); ++bt)
      for (int64_t t = 0; t < tuples_per_batch; ++t) {
        int64_t row = bt * tuples_per_batch + t;
        auto off = tuple_offset(ctx, dims, ds, idx.data() + row * k, k, b);
        if (!off.ok()) {
          st = off.status();
          return;
        }
        T* dst = o + bt * batch_stride + *off;
        for (int64_t e = 0; e < block; ++e) dst[e] += g[row * block + e];
      }
  });
  if (!ok) return unsupported_dtype(ctx, dy.dtype());
  return st;
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Scatter", 9, 10, scatter_elements);
ORT_REGISTER_CPU_KERNEL("ScatterElements", 11, 1000, scatter_elements);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "ScatterElements", 1, 1000, DeviceKind::kCpu, scatter_elements);
ORT_REGISTER_CPU_KERNEL("ScatterND", 11, 1000, scatter_nd);
ORT_REGISTER_CPU_KERNEL("GatherND", 11, 1000, gather_nd);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "GatherNDGrad", 1, 1000, DeviceKind::kCpu, gather_nd_grad);

}  // namespace ort_train
