// CPU kernels: Gather (rows of contiguous blocks; embedding lookups are the hot
// case) and GatherElements. Negative indices count from the end; out-of-range
// indices are an error naming the node, never a silent read.
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += data.rank();
  int64_t outer = 1, inner = 1, n = data.dims()[axis];
  for (int64_t i = 0; i < axis; ++i) outer *= data.dims()[i];
  for (int64_t i = axis + 1; i < data.rank(); ++i) inner *= data.dims()[i];
  std::vector<int64_t> idx = indices.to_int64_vector();
  for (int64_t& v : idx) {
    if (v < -n || v >= n)
      return invalid_argument("{}: index {} is out of range for axis of size {}", ctx.node().describe(), v, n);
    if (v < 0) v += n;
  }
  size_t row = static_cast<size_t>(inner) * dtype_size(data.dtype());
  int64_t k = static_cast<int64_t>(idx.size());
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(out.raw());
  parallel_for(outer * k, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / k, j = t % k;
      std::memcpy(dst + t * row, src + (o * n + idx[j]) * row, row);
    }
  });
  return Status::Ok();
}

Status gather_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  int64_t rank = data.rank();
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += rank;
  std::vector<int64_t> idx = indices.to_int64_vector();
  int64_t n = data.dims()[axis];
  std::vector<int64_t> dstride(rank, 1), istride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) {
    dstride[d] = dstride[d + 1] * data.dims()[d + 1];
    istride[d] = istride[d + 1] * indices.dims()[d + 1];
  }
  Status st;
  bool ok = dispatch_all(data.dtype(), [&]<typename T>() {
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    for (int64_t i = 0; i < static_cast<int64_t>(idx.size()); ++i) {
      int64_t off = 0, rem = i;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t c = rem / istride[d];
        rem %= istride[d];
        if (d == axis) {
          c = idx[i];
          if (c < -n || c >= n) {
            st = invalid_argument("{}: index {} is out of range for axis of size {}", ctx.node().describe(), c, n);
            return;
          }
          if (c < 0) c += n;
        }
        off += c * dstride[d];
      }
      dst[i] = src[off];
    }
  });
  if (!ok) return unsupported_dtype(ctx, data.dtype());
  return st;
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Gather", 1, 1000, gather);
ORT_REGISTER_CPU_KERNEL("GatherElements", 11, 1000, gather_elements);

}  // namespace ort_train
