// CPU kernels of DepthToSpace and SpaceToDepth (and com.ort_train SpaceToDepth
// with a mode): one strided copy of the permuted view graph/ops/depth_space.h makes.
#include "graph/ops/depth_space.h"
#include "runtime/cpu/copy.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

KernelFn depth_space(bool to_depth) {
  return [to_depth](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(bool crd, depth_space_is_crd(ctx.node()));
    ASSIGN_OR_RETURN(DepthSpaceView v, depth_space_view(x.dims(), ctx.node().attr_int("blocksize", 0), to_depth, crd,
                                                        ctx.node()));
    strided_copy(dtype_size(x.dtype()), v.dims, x.raw(), v.src_strides, ctx.output(0).raw(), contiguous_strides(v.dims));
    return Status::Ok();
  };
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("DepthToSpace", 1, 1000, depth_space(false));
ORT_REGISTER_CPU_KERNEL("SpaceToDepth", 1, 1000, depth_space(true));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "SpaceToDepth", 1, 1000, DeviceKind::kCpu, depth_space(true));

}  // namespace ort_train
