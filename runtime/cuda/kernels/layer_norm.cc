// CUDA registrations: LayerNormalization, its simplified form (RMSNorm,
// com.ort_train SimplifiedLayerNormalization) and their gradients.
// Kernels: cuda_kernels/layer_norm.cu.
#include "cuda_kernels/layer_norm.h"
#include "cuda_kernels/reduce.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

void rows_and_width(const Tensor& x, int64_t axis, int64_t& rows, int64_t& n) {
  if (axis < 0) axis += x.rank();
  rows = n = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= x.dims()[d];
  for (int64_t d = axis; d < x.rank(); ++d) n *= x.dims()[d];
}

Status layer_norm_impl(KernelContext& ctx, bool simplified) {
  const Tensor& X = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = !simplified && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!dtype_is_float(X.dtype()) || !elem_type(X.dtype()) || scale.dtype() != X.dtype())
    return unsupported_cuda_dtype(ctx, X.dtype());
  int64_t rows, n;
  rows_and_width(X, ctx.node().attr_int("axis", -1), rows, n);
  if (scale.numel() != n && scale.numel() != 1)
    return shape_error("{}: scale has {} elements, the normalized shape has {}", ctx.node().describe(), scale.numel(), n);
  if (bias && bias->numel() != n && bias->numel() != 1)
    return shape_error("{}: bias has {} elements, the normalized shape has {}", ctx.node().describe(), bias->numel(), n);
  CUDA_OUTPUT(Y, ctx, 0);
  void* stats[3] = {nullptr, nullptr, nullptr};
  ElemType st = ElemType::kF32;
  for (size_t o = 1; o <= 2; ++o)
    if (ctx.num_outputs() > o && ctx.has_output(o)) {
      CUDA_OUTPUT(t, ctx, o);
      stats[simplified ? 2 : o] = t.raw();  // the simplified op's outputs: Y, InvStdDev
      st = t.dtype() == DType::kDouble ? ElemType::kF64 : ElemType::kF32;
    }
  double eps = ctx.node().attr_float("epsilon", 1e-5f);
  CUDA_RETURN_IF_ERROR(launch_layer_norm(*elem_type(X.dtype()), X.raw(), scale.raw(), scale.numel() == 1,
                                         bias ? bias->raw() : nullptr, bias && bias->numel() == 1, Y.raw(), st,
                                         stats[1], stats[2], rows, n, eps, simplified, stream()));
  return Status::Ok();
}

Status layer_norm(KernelContext& ctx) { return layer_norm_impl(ctx, false); }
Status rms_norm(KernelContext& ctx) { return layer_norm_impl(ctx, true); }

Status layer_norm_grad_impl(KernelContext& ctx, bool simplified) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  const Tensor& inv = ctx.input(simplified ? 3 : 4);
  const void* mean = simplified ? nullptr : ctx.input(3).raw();
  if (!dtype_is_float(X.dtype()) || !elem_type(X.dtype())) return unsupported_cuda_dtype(ctx, X.dtype());
  int64_t rows, n;
  rows_and_width(X, ctx.node().attr_int("axis", -1), rows, n);
  ElemType t = *elem_type(X.dtype());
  ElemType st = inv.dtype() == DType::kDouble ? ElemType::kF64 : ElemType::kF32;
  void* dx = nullptr;
  if (ctx.has_output(0)) {
    CUDA_OUTPUT(o, ctx, 0);
    dx = o.raw();
  }
  // Parameter gradients have n elements; a broadcast (1-element) scale or bias sums them after.
  Tensor* param_out[3] = {nullptr, nullptr, nullptr};
  Tensor columns[3];
  for (size_t k = 1; k <= 2; ++k) {
    if (ctx.num_outputs() <= k || !ctx.has_output(k)) continue;
    CUDA_OUTPUT(o, ctx, k);
    param_out[k] = &o;
    if (o.numel() == n) {
      columns[k] = o;
    } else {
      ASSIGN_OR_RETURN(columns[k], temp(ctx, X.dtype(), {n}));
    }
  }
  Tensor partials;
  if (columns[1].defined() || columns[2].defined()) {
    ASSIGN_OR_RETURN(partials, temp(ctx, DType::kDouble, {2 * layer_norm_param_chunks(rows) * n}));
  }
  CUDA_RETURN_IF_ERROR(launch_layer_norm_grad(
      t, dY.raw(), X.raw(), scale.raw(), scale.numel() == 1, st, mean, inv.raw(), dx,
      columns[1].defined() ? columns[1].raw() : nullptr, columns[2].defined() ? columns[2].raw() : nullptr,
      partials.defined() ? partials.data<double>() : nullptr, rows, n, simplified, stream()));
  for (size_t k = 1; k <= 2; ++k) {
    if (!param_out[k] || param_out[k]->numel() == n) continue;
    IndexMap kept, red;
    red.rank = 1;
    red.dims[0] = n;
    red.strides[0] = 1;
    CUDA_RETURN_IF_ERROR(launch_reduce(ReduceOp::kSum, t, columns[k].raw(), param_out[k]->raw(), 1, n, kept, red, stream()));
  }
  return Status::Ok();
}

Status layer_norm_grad(KernelContext& ctx) { return layer_norm_grad_impl(ctx, false); }
Status rms_norm_grad(KernelContext& ctx) { return layer_norm_grad_impl(ctx, true); }

}  // namespace

ORT_REGISTER_CUDA_KERNEL_INPLACE("LayerNormalization", 17, 1000, layer_norm);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "LayerNormalization", 1, 1000, DeviceKind::kCuda, layer_norm);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "LayerNormalizationGrad", 1, 1000, layer_norm_grad);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "SimplifiedLayerNormalization", 1, 1000, DeviceKind::kCuda, rms_norm);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "SimplifiedLayerNormalizationGrad", 1, 1000, rms_norm_grad);

}  // namespace ort_train::cuda
