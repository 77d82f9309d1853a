// CUDA registrations of the parameterised activations, the trigonometric and
// hyperbolic functions, ActivationGrad and PRelu. Kernels:
// cuda_kernels/activations.cu (PRelu: elementwise.cu's broadcasting binary op).
#include "cuda_kernels/activations.h"
#include "cuda_kernels/elementwise.h"
#include "graph/ops/activations.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

Status activation(KernelContext& ctx) {
  ASSIGN_OR_RETURN(ActivationCall call, activation_call(ctx.node(), ctx.node().op_type));
  const Tensor& x = ctx.input(0);
  auto t = elem_type(x.dtype());
  bool ok = t && *t != ElemType::kBool && (dtype_is_float(x.dtype()) || activation_takes_integers(call.op));
  if (!ok) return unsupported_cuda_dtype(ctx, x.dtype());
  CUDA_OUTPUT(out, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_activation(call.op, *t, x.raw(), out.raw(), x.numel(), call.params, stream()));
  return Status::Ok();
}

Status activation_grad(KernelContext& ctx) {
  ASSIGN_OR_RETURN(ActivationCall call, activation_grad_call(ctx.node()));
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  auto t = elem_type(dy.dtype());
  if (!t || !dtype_is_float(dy.dtype())) return unsupported_cuda_dtype(ctx, dy.dtype());
  if (x.dims() != dy.dims() || x.dtype() != dy.dtype())
    return shape_error("{}: dY and X differ in shape or dtype", ctx.node().describe());
  CUDA_OUTPUT(dx, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_activation_grad(call.op, *t, dy.raw(), x.raw(), dx.raw(), dy.numel(), call.params,
                                              stream()));
  return Status::Ok();
}

Status prelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  auto t = elem_type(x.dtype());
  if (!t || *t == ElemType::kBool || slope.dtype() != x.dtype()) return unsupported_cuda_dtype(ctx, x.dtype());
  CUDA_OUTPUT(out, ctx, 0);
  bool same = slope.dims() == x.dims();
  IndexMap xm, sm;
  if (!same) {
    ASSIGN_OR_RETURN(xm, broadcast_map(x.dims(), out.dims()));
    ASSIGN_OR_RETURN(sm, broadcast_map(slope.dims(), out.dims()));
  }
  CUDA_RETURN_IF_ERROR(
      launch_binary(BinaryOp::kPRelu, *t, x.raw(), slope.raw(), out.raw(), out.numel(), same, xm, sm, stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL_INPLACE("HardSigmoid", 6, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("HardSwish", 14, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Elu", 6, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Selu", 6, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Celu", 12, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("ThresholdedRelu", 10, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Shrink", 9, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Softsign", 1, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Mish", 18, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Tan", 7, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Sinh", 9, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Cosh", 9, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Asin", 7, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Acos", 7, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Asinh", 9, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Acosh", 9, 1000, activation);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Atanh", 9, 1000, activation);
ORT_REGISTER_CUDA_KERNEL("PRelu", 7, 1000, prelu);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "ActivationGrad", 1, 1000, activation_grad);

}  // namespace ort_train::cuda
