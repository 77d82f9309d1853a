// Shape rules of the loss gradient ops (com.ort_train): the gradient has the
// shape of input 1 (the forward's log-probabilities or NLL input); the
// operands the kernel indexes by each other are checked against it. Kernels in
// runtime/cpu/kernels/losses_grad.cc; schemas in docs/gradient_ops.md.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

// (dLoss, scores [N, C, d...], labels [N, d...][, weights [C]]): the kernel
// reads dLoss, the scores and the weights as one float type, one label per
// score row, a weight per class, and dLoss per row (reduction none) or its
// first element.
Status loss_grad_rule(InferContext& ctx) {
  const DType t = ctx.input_dtype(1);
  RETURN_IF_ERROR(require_dtype(ctx, 0, t, "dLoss"));
  RETURN_IF_ERROR(require_dtype(ctx, 3, t, "the class weights"));
  const DType labels = ctx.input_dtype(2);
  if (labels != DType::kUndefined && labels != DType::kInt64 && labels != DType::kInt32)
    return shape_error("{}: the labels must be int32 or int64, not {}", ctx.node().describe(), dtype_name(labels));
  const OptShape& x = ctx.input_shape(1);
  if (x && x->size() < 2)
    return shape_error("{}: the scores {} must be [N, C, d...]", ctx.node().describe(), shape_to_string(x));
  if (x && shape_fully_known(*x)) {
    const int64_t n = (*x)[0].value, c = (*x)[1].value;
    const int64_t rows = n * c == 0 ? 0 : num_elements(dims_from_shape(*x)) / c;
    RETURN_IF_ERROR(require_elements(ctx, 2, Dim(rows), "the labels (one per score row)"));
    RETURN_IF_ERROR(require_elements(ctx, 3, Dim(c), "the class weights (one per class)"));
    const bool per_row = ctx.node().attr_string("reduction", "mean") == "none";
    RETURN_IF_ERROR(require_elements(ctx, 0, Dim(per_row ? rows : 1), "dLoss"));
  }
  ctx.set_output(0, t, x);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "SoftmaxCrossEntropyLossGrad", 1, 1000, loss_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "NegativeLogLikelihoodLossGrad", 1, 1000, loss_grad_rule, kPlainOp);

}  // namespace ort_train
