// CUDA registrations of GridSample and com.ort_train GridSampleGrad (4-D,
// float32): cuda_kernels/grid_sample.cu over graph/ops/grid_sample.h's checks.
#include "cuda_kernels/grid_sample.h"
#include "graph/ops/grid_sample.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

Status grid_sample(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &grid = ctx.input(1);
  if (x.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, x.dtype());
  if (grid.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, grid.dtype());
  ASSIGN_OR_RETURN(GridSampleParams p, grid_sample_params(ctx.node(), x.dims(), grid.dims()));
  CUDA_OUTPUT(y, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_grid_sample(x.data<float>(), grid.data<float>(), y.data<float>(), x.dims()[0],
                                          x.dims()[1], grid.dims()[1] * grid.dims()[2], p, stream()));
  return Status::Ok();
}

Status grid_sample_grad(KernelContext& ctx) {
  const Tensor &dy = ctx.input(0), &x = ctx.input(1), &grid = ctx.input(2);
  if (x.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, x.dtype());
  ASSIGN_OR_RETURN(GridSampleParams p, grid_sample_params(ctx.node(), x.dims(), grid.dims()));
  const int64_t n = x.dims()[0], c = x.dims()[1], points = grid.dims()[1] * grid.dims()[2];
  if (dy.dtype() != DType::kFloat || grid.dtype() != DType::kFloat || dy.numel() != n * c * points)
    return shape_error("{}: dY must be float32 with {} elements", ctx.node().describe(), n * c * points);
  float* dx = nullptr;
  float* dgrid = nullptr;
  if (ctx.has_output(0)) {
    CUDA_OUTPUT(out, ctx, 0);
    dx = out.data<float>();
  }
  if (ctx.has_output(1)) {
    CUDA_OUTPUT(out, ctx, 1);
    dgrid = out.data<float>();
  }
  CUDA_RETURN_IF_ERROR(launch_grid_sample_grad(dy.data<float>(), x.data<float>(), grid.data<float>(), dx, dgrid, n, c,
                                               points, p, context().deterministic, stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("GridSample", 16, 1000, grid_sample);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "GridSampleGrad", 1, 1000, grid_sample_grad);

}  // namespace ort_train::cuda
