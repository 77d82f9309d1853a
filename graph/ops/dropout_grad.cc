// Shape rule of DropoutGrad(dY, mask[, ratio, training_mode]) -> dX
// (com.ort_train). Kernel in runtime/cpu/kernels/dropout_grad.cc.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {

namespace {

// The mask is read as bool, element for element with dY.
Status dropout_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_dtype(ctx, 1, DType::kBool, "the mask"));
  return elementwise_grad_rule(ctx);
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "DropoutGrad", 1, 1000, dropout_grad_rule, kReadsRunOptions | kSixteenBitInput(0));

}  // namespace ort_train
