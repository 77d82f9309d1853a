// CUDA registrations: MaxPool (with optional Indices), AveragePool, LpPool,
// GlobalAveragePool, GlobalMaxPool, GlobalLpPool and the gradients MaxPoolGrad,
// AveragePoolGrad, over 1-D/2-D/3-D float32 windows. Hand-written kernels
// (cuda_kernels/pooling.cu) rather than cuDNN: cuDNN gives no argmax indices,
// no asymmetric pads or ceil_mode, and its padded-average divisor differs.
#include <algorithm>
#include <vector>

#include "cuda_kernels/pooling.h"
#include "graph/ops/window_geometry.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

int64_t out_size(const PoolGeometry& g) { return g.out[0] * g.out[1] * g.out[2]; }

// AveragePool gained dilations only at opset 19; ignore stray ones before (as the CPU kernel does).
Node pool_node(const KernelContext& ctx, bool average) {
  Node node = ctx.node();
  if (average && ctx.opset() < 19)
    std::erase_if(node.attributes, [](const Attribute& a) { return a.name == "dilations"; });
  return node;
}


Status lp_pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, X.dtype());
  ASSIGN_OR_RETURN(int64_t p, lp_pool_order(ctx.node(), ctx.opset()));
  ASSIGN_OR_RETURN(PoolGeometry g, pool_geometry(ctx.node(), X.dims()));
  CUDA_OUTPUT(Y, ctx, 0);
  int64_t planes = X.dims()[0] * X.dims()[1];
  if (Y.numel() != planes * out_size(g))
    return shape_error("{}: Y has {} elements, the pooling geometry gives {}", ctx.node().describe(), Y.numel(),
                       planes * out_size(g));
  CUDA_RETURN_IF_ERROR(launch_lp_pool(X.data<float>(), Y.data<float>(), planes, g, p, stream()));
  return Status::Ok();
}

template <bool kMax>
Status pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, X.dtype());
  Node node = pool_node(ctx, !kMax);
  ASSIGN_OR_RETURN(PoolGeometry g, pool_geometry(node, X.dims()));
  CUDA_OUTPUT(Y, ctx, 0);
  int64_t planes = X.dims()[0] * X.dims()[1];
  if (Y.numel() != planes * out_size(g))
    return shape_error("{}: Y has {} elements, the pooling geometry gives {}", node.describe(), Y.numel(),
                       planes * out_size(g));
  if (kMax) {
    int64_t* indices = nullptr;
    if (ctx.has_output(1)) {
      CUDA_OUTPUT(I, ctx, 1);
      indices = I.data<int64_t>();
    }
    bool column_major = node.attr_int("storage_order", 0) != 0;
    CUDA_RETURN_IF_ERROR(launch_max_pool(X.data<float>(), Y.data<float>(), indices, planes, g, column_major, stream()));
  } else {
    bool include_pad = node.attr_int("count_include_pad", 0) != 0;
    CUDA_RETURN_IF_ERROR(launch_average_pool(X.data<float>(), Y.data<float>(), planes, g, include_pad, stream()));
  }
  return Status::Ok();
}

template <GlobalPoolKind kKind>
Status global_pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, X.dtype());
  if (X.rank() < 2) return shape_error("{}: X must have rank >= 2, got {}", ctx.node().describe(), X.rank());
  CUDA_OUTPUT(Y, ctx, 0);
  int64_t planes = X.dims()[0] * X.dims()[1];
  int64_t size = planes ? X.numel() / planes : 0;
  int64_t p = 0;
  if (kKind == GlobalPoolKind::kLp) {
    ASSIGN_OR_RETURN(p, lp_pool_order(ctx.node(), ctx.opset()));
  }
  CUDA_RETURN_IF_ERROR(launch_global_pool(X.data<float>(), Y.data<float>(), planes, size, kKind, p, stream()));
  return Status::Ok();
}

Status max_pool_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  if (dY.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, dY.dtype());
  if (idx.dtype() != DType::kInt64 || idx.numel() != dY.numel())
    return invalid_argument("{}: Indices must be int64 and shaped like dY", ctx.node().describe());
  CUDA_OUTPUT(dX, ctx, 0);
  if (dX.rank() < 2) return shape_error("{}: dX must have rank >= 2", ctx.node().describe());
  int64_t planes = dX.dims()[0] * dX.dims()[1];
  int64_t out_plane = planes ? dY.numel() / planes : 0, in_plane = planes ? dX.numel() / planes : 0;
  CUDA_RETURN_IF_ERROR(launch_max_pool_grad(dY.data<float>(), idx.data<int64_t>(), dX.data<float>(), planes, out_plane,
                                            in_plane, context().deterministic, index_fault_site(ctx), stream()));
  return Status::Ok();
}

Status average_pool_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  if (dY.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, dY.dtype());
  CUDA_OUTPUT(dX, ctx, 0);
  ASSIGN_OR_RETURN(PoolGeometry g, pool_geometry(ctx.node(), dX.dims()));
  int64_t planes = dX.dims()[0] * dX.dims()[1];
  if (planes * out_size(g) != dY.numel())
    return shape_error("{}: dY has {} elements, the pooling geometry gives {}", ctx.node().describe(), dY.numel(),
                       planes * out_size(g));
  bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  CUDA_RETURN_IF_ERROR(launch_average_pool_grad(dY.data<float>(), dX.data<float>(), planes, g, include_pad, stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("MaxPool", 1, 1000, pool<true>);
ORT_REGISTER_CUDA_KERNEL("AveragePool", 1, 1000, pool<false>);
ORT_REGISTER_CUDA_KERNEL("LpPool", 1, 1000, lp_pool);
ORT_REGISTER_CUDA_KERNEL("GlobalAveragePool", 1, 1000, global_pool<GlobalPoolKind::kAverage>);
ORT_REGISTER_CUDA_KERNEL("GlobalMaxPool", 1, 1000, global_pool<GlobalPoolKind::kMax>);
ORT_REGISTER_CUDA_KERNEL("GlobalLpPool", 1, 1000, global_pool<GlobalPoolKind::kLp>);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "MaxPoolGrad", 1, 1000, max_pool_grad);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "AveragePoolGrad", 1, 1000, average_pool_grad);

}  // namespace ort_train::cuda
