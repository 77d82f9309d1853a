// Shape rules of GatherGrad and SliceGrad (com.ort_train): a tensor of dY's
// dtype with the shape given as input 1 (the forward input's shape).
// Kernels in runtime/cpu/kernels/gather_grad.cc and slice_grad.cc.
#include "graph/op_schema.h"

namespace ort_train {
namespace {
Status rule(InferContext& ctx) { return shape_from_value(ctx, 0, 1); }
}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "GatherGrad", 1, 1000, rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "SliceGrad", 1, 1000, rule, kPlainOp);

}  // namespace ort_train
