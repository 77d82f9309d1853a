// CUDA registrations of DepthToSpace and SpaceToDepth (and com.ort_train
// SpaceToDepth with a mode): one gather copy (cuda_kernels/copy.cu) of the
// permuted view graph/ops/depth_space.h makes, the CPU kernel's own view.
#include "cuda_kernels/copy.h"
#include "graph/ops/depth_space.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

KernelFn depth_space(bool to_depth) {
  return [to_depth](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(bool crd, depth_space_is_crd(ctx.node()));
    ASSIGN_OR_RETURN(DepthSpaceView v, depth_space_view(x.dims(), ctx.node().attr_int("blocksize", 0), to_depth, crd,
                                                        ctx.node()));
    CUDA_OUTPUT(out, ctx, 0);
    ASSIGN_OR_RETURN(CopyMap map, strided_map(v.dims, v.src_strides, 0));
    CUDA_RETURN_IF_ERROR(launch_gather_copy(x.raw(), out.raw(), out.numel(), static_cast<int>(dtype_size(x.dtype())),
                                            map, stream()));
    return Status::Ok();
  };
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("DepthToSpace", 1, 1000, depth_space(false));
ORT_REGISTER_CUDA_KERNEL("SpaceToDepth", 1, 1000, depth_space(true));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "SpaceToDepth", 1, 1000, depth_space(true));

}  // namespace ort_train::cuda
