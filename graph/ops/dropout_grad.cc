// Shape rule of DropoutGrad(dY, mask[, ratio, training_mode]) -> dX
// (com.ort_train). Kernel in runtime/cpu/kernels/dropout_grad.cc.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {

ORT_REGISTER_OP(kOrtTrainDomain, "DropoutGrad", 1, 1000, elementwise_grad_rule, kReadsRunOptions);

}  // namespace ort_train
