// Shape rules of the activation gradient ops (com.ort_train domain), each
// (dY, Y or X [, attributes]) -> dX with dY's dtype and shape. Kernels in
// runtime/cpu/kernels/activation_grad.cc; schemas in docs/gradient_ops.md.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

// (dY, X, B): GeluGrad at X + B, B one value per element of X's last dim.
Status bias_gelu_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(elementwise_grad_rule(ctx));
  const OptShape& x = ctx.input_shape(1);
  if (x && !x->empty()) RETURN_IF_ERROR(require_elements(ctx, 2, x->back(), "B (one per element of X's last dim)"));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "ReluGrad", 1, 1000, elementwise_grad_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP(kOrtTrainDomain, "SigmoidGrad", 1, 1000, elementwise_grad_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP(kOrtTrainDomain, "TanhGrad", 1, 1000, elementwise_grad_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP(kOrtTrainDomain, "GeluGrad", 1, 1000, elementwise_grad_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP(kOrtTrainDomain, "BiasGeluGrad", 1, 1000, bias_gelu_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "SiluGrad", 1, 1000, elementwise_grad_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP(kOrtTrainDomain, "LeakyReluGrad", 1, 1000, elementwise_grad_rule, kPlainOp);

}  // namespace ort_train
