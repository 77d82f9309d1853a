// CPU kernel of SliceGrad(dY, shape, starts, ends[, axes, steps]) -> dX: zeros
// of `shape` with dY written back into the sliced positions, the reverse of
// Slice's strided copy. The slice arguments follow the forward Slice: inputs,
// or starts/ends/axes attributes when the node has them (Slice before opset 10).
#include <cstring>

#include "graph/ops/slice.h"
#include "runtime/cpu/copy.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status slice_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  Tensor& dx = ctx.output(0);
  ASSIGN_OR_RETURN(auto r, resolve_node_slice(ctx.node(), dx.dims(), ctx.node().attr("starts") != nullptr, 2,
                                              host_ints(ctx)));
  std::memset(dx.raw(), 0, dx.nbytes());
  if (dy.numel() == 0) return Status::Ok();
  std::vector<int64_t> strides = contiguous_strides(dx.dims()), dst_strides;
  int64_t offset = 0;
  for (size_t d = 0; d < r.size(); ++d) {
    offset += r[d].start * strides[d];
    dst_strides.push_back(strides[d] * r[d].step);
  }
  size_t es = dtype_size(dy.dtype());
  strided_copy(es, dy.dims(), dy.raw(), contiguous_strides(dy.dims()),
               static_cast<char*>(dx.raw()) + offset * static_cast<int64_t>(es), dst_strides);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "SliceGrad", 1, 1000, DeviceKind::kCpu, slice_grad);

}  // namespace ort_train
