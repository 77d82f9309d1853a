// CUDA registrations of InstanceNormalization, GroupNormalization and
// GroupNormGrad. Kernels: cuda_kernels/group_norm.cu; geometry:
// graph/ops/group_norm.h, the CPU kernels' own.
#include "cuda_kernels/group_norm.h"
#include "graph/ops/group_norm.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

Result<GroupNormShape> shape_of(const KernelContext& ctx, const Dims& x) {
  ASSIGN_OR_RETURN(GroupNormGeometry g, group_norm_geometry(ctx.node(), ctx.opset(), x));
  GroupNormShape s;
  s.rows = g.batch * g.groups;
  s.groups = g.groups;
  s.row_size = g.row_size();
  s.spatial = g.spatial;
  s.channels_per_group = g.channels_per_group();
  s.affine = g.affine_size();
  s.affine_per_group = g.affine_per_group;
  s.epsilon = g.epsilon;
  return s;
}

Status group_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto t = elem_type(x.dtype());
  if (!t || !dtype_is_float(x.dtype())) return unsupported_cuda_dtype(ctx, x.dtype());
  ASSIGN_OR_RETURN(GroupNormShape g, shape_of(ctx, x.dims()));
  if (ctx.input(1).numel() != g.affine || ctx.input(2).numel() != g.affine)
    return shape_error("{}: scale and bias need {} entries", ctx.node().describe(), g.affine);
  CUDA_OUTPUT(y, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_group_norm(*t, g, x.raw(), ctx.input(1).raw(), ctx.input(2).raw(), y.raw(), stream()));
  return Status::Ok();
}

Status group_norm_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  auto t = elem_type(x.dtype());
  if (!t || !dtype_is_float(x.dtype())) return unsupported_cuda_dtype(ctx, x.dtype());
  ASSIGN_OR_RETURN(GroupNormShape g, shape_of(ctx, x.dims()));
  if (ctx.input(2).numel() != g.affine || dy.dims() != x.dims())
    return shape_error("{}: dY, X and scale do not fit", ctx.node().describe());
  void* dx = nullptr;
  if (ctx.has_output(0)) {
    CUDA_OUTPUT(out, ctx, 0);
    dx = out.raw();
  }
  ASSIGN_OR_RETURN(Tensor rows, temp(ctx, DType::kDouble, {2, g.rows, g.affine}));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(rows.raw(), 0, rows.nbytes(), stream()));
  double* ds = rows.data<double>();
  double* db = ds + g.rows * g.affine;
  CUDA_RETURN_IF_ERROR(launch_group_norm_grad(*t, g, dy.raw(), x.raw(), ctx.input(2).raw(), dx, ds, db, stream()));
  for (size_t o = 1; o <= 2; ++o) {
    if (!ctx.has_output(o)) continue;
    CUDA_OUTPUT(out, ctx, o);
    CUDA_RETURN_IF_ERROR(launch_sum_rows(*t, o == 1 ? ds : db, g.rows, g.affine, out.raw(), stream()));
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("InstanceNormalization", 6, 1000, group_norm);
ORT_REGISTER_CUDA_KERNEL("GroupNormalization", 18, 1000, group_norm);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "GroupNormGrad", 1, 1000, group_norm_grad);

}  // namespace ort_train::cuda
