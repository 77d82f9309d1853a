// CPU kernel of Compress: the slices along `axis` (or the elements of the
// flattened input) whose condition entry is true, in order.
#include <cstring>

#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> cond = ctx.input(1).to_int64_vector();
  const Attribute* axis_attr = ctx.node().attr("axis");
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (axis_attr) {
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr->i, x.rank(), ctx.node()));
    n = x.dims()[static_cast<size_t>(axis)];
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dims()[static_cast<size_t>(d)];
  }
  if (static_cast<int64_t>(cond.size()) > n)
    return shape_error("{}: the condition has {} entries for {}", ctx.node().describe(), cond.size(), n);
  const size_t bytes = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(ctx.output(0).raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < static_cast<int64_t>(cond.size()); ++i)
      if (cond[static_cast<size_t>(i)]) {
        std::memcpy(dst, src + (o * n + i) * static_cast<int64_t>(bytes), bytes);
        dst += bytes;
      }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Compress", 9, 1000, compress);

}  // namespace ort_train
