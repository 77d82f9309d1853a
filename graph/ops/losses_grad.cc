// Shape rules of the loss gradient ops (com.ort_train): the gradient has the
// shape of input 1 (the forward's log-probabilities or NLL input). Kernels in
// runtime/cpu/kernels/losses_grad.cc; schemas in docs/gradient_ops.md.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status like_input1(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(1));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "SoftmaxCrossEntropyLossGrad", 1, 1000, like_input1, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "NegativeLogLikelihoodLossGrad", 1, 1000, like_input1, kPlainOp);

}  // namespace ort_train
