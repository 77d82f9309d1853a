// CPU kernel: Slice as one strided copy (negative steps are negative strides).
#include "graph/ops/slice.h"
#include "runtime/cpu/copy.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  ASSIGN_OR_RETURN(auto r, resolve_node_slice(ctx.node(), x.dims(), ctx.opset() < 10, 1, host_ints(ctx)));
  if (out.numel() == 0) return Status::Ok();
  std::vector<int64_t> strides = contiguous_strides(x.dims()), src_strides;
  int64_t offset = 0;
  for (size_t d = 0; d < r.size(); ++d) {
    offset += r[d].start * strides[d];
    src_strides.push_back(strides[d] * r[d].step);
  }
  size_t es = dtype_size(x.dtype());
  strided_copy(es, out.dims(), static_cast<const char*>(x.raw()) + offset * static_cast<int64_t>(es), src_strides,
               out.raw(), contiguous_strides(out.dims()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Slice", 1, 1000, slice);

}  // namespace ort_train
