// Shape rules of SoftmaxGrad and LogSoftmaxGrad (com.ort_train): dX has dY's
// dtype and shape. Kernels in runtime/cpu/kernels/softmax_grad.cc.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {

namespace {

// Y is read as dY's type, element for element.
Status softmax_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_dtype(ctx, 0));
  return elementwise_grad_rule(ctx);
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "SoftmaxGrad", 1, 1000, softmax_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "LogSoftmaxGrad", 1, 1000, softmax_grad_rule, kPlainOp);

}  // namespace ort_train
