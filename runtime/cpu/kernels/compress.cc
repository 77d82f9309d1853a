// CPU kernel of Compress: the slices along `axis` (or the elements of the
// flattened input) that graph/ops/compress.h's view keeps, in order.
#include <cstring>

#include "graph/ops/compress.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(CompressView v, compress_view(ctx.node(), x.dims(), ctx.input(1)));
  const size_t bytes = static_cast<size_t>(v.inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(ctx.output(0).raw());
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i : v.keep) {
      std::memcpy(dst, src + (o * v.n + i) * static_cast<int64_t>(bytes), bytes);
      dst += bytes;
    }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Compress", 9, 1000, compress);

}  // namespace ort_train
