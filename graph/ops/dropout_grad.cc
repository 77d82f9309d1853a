// Shape rule of DropoutGrad(dY, mask[, ratio, training_mode]) -> dX
// (com.ort_train). Kernel in runtime/cpu/kernels/dropout_grad.cc.
#include "graph/op_schema.h"

namespace ort_train {

ORT_REGISTER_OP(kOrtTrainDomain, "DropoutGrad", 1, 1000, same_as_input0, kReadsRunOptions);

}  // namespace ort_train
