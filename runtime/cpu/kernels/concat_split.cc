// CPU kernels: Concat and Split, as strided copies into/out of an axis range.
#include "runtime/cpu/copy.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// Copies `part` into (or out of) `whole` at `offset` along `axis`.
void copy_along_axis(const Tensor& part, const Tensor& whole, int64_t axis, int64_t offset, bool into_whole) {
  if (part.numel() == 0) return;
  size_t es = dtype_size(part.dtype());
  std::vector<int64_t> ps = contiguous_strides(part.dims());
  std::vector<int64_t> ws = contiguous_strides(whole.dims());
  char* wbase = static_cast<char*>(whole.raw()) + offset * ws[axis] * static_cast<int64_t>(es);
  if (into_whole) strided_copy(es, part.dims(), part.raw(), ps, wbase, ws);
  else strided_copy(es, part.dims(), wbase, ws, part.raw(), ps);
}

Status concat(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += out.rank();
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    copy_along_axis(in, out, axis, offset, true);
    offset += in.dims()[axis];
  }
  return Status::Ok();
}

Status split(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += in.rank();
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    int64_t size = ctx.shapes().output(i).shape->at(axis).value;
    if (ctx.has_output(i)) copy_along_axis(ctx.output(i), in, axis, offset, false);
    offset += size;
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Concat", 4, 1000, concat);
ORT_REGISTER_CPU_KERNEL("Split", 2, 1000, split);

}  // namespace ort_train
