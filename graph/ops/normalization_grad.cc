// Shape rules of LayerNormalizationGrad and BatchNormalizationGrad
// (com.ort_train): (dX, dScale, dBias) shaped like X, Scale, Scale.
// Kernels in runtime/cpu/kernels/normalization_grad.cc.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status norm_grad_rule(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(1));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_dtype(2), ctx.input_shape(2));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "LayerNormalizationGrad", 1, 1000, norm_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "SimplifiedLayerNormalizationGrad", 1, 1000, norm_grad_rule, kPlainOp);  // (dX, dScale)
ORT_REGISTER_OP(kOrtTrainDomain, "BatchNormalizationGrad", 1, 1000, norm_grad_rule, kPlainOp);

}  // namespace ort_train
