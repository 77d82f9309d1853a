// Shape rule of PadGrad(dY, shape) -> dX (com.ort_train): the shape given by
// input 1's value. Kernel in runtime/cpu/kernels/pad_grad.cc.
#include "graph/op_schema.h"

namespace ort_train {
namespace {
Status rule(InferContext& ctx) { return shape_from_value(ctx, 0, 1); }
}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "PadGrad", 1, 1000, rule, kPlainOp);

}  // namespace ort_train
