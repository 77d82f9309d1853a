// Shape rules of the convolution and pooling gradient ops (com.ort_train).
//   ConvGrad(dY, X, W) -> dX, dW, dB        shaped like X, W and [W.dims[0]]
//   MaxPoolGrad(dY, Indices, shape) -> dX   shape given by input 2's value
//   AveragePoolGrad(dY, shape) -> dX        shape given by input 1's value
// Kernels in runtime/cpu/kernels/conv_grad.cc and pooling_grad.cc.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

Status conv_grad_rule(InferContext& ctx) {
  DType t = ctx.input_dtype(0);
  ctx.set_output(0, t, ctx.input_shape(1));
  if (ctx.num_outputs() > 1) ctx.set_output(1, t, ctx.input_shape(2));
  if (ctx.num_outputs() > 2) {
    const OptShape& w = ctx.input_shape(2);
    ctx.set_output(2, t, w && !w->empty() ? OptShape(Shape{(*w)[0]}) : std::nullopt);
  }
  return Status::Ok();
}

Status max_pool_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_shape(ctx, 1, 0, "Indices"));
  return shape_from_value(ctx, 0, 2);
}
Status average_pool_grad_rule(InferContext& ctx) { return shape_from_value(ctx, 0, 1); }

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "ConvGrad", 1, 1000, conv_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "MaxPoolGrad", 1, 1000, max_pool_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "AveragePoolGrad", 1, 1000, average_pool_grad_rule, kPlainOp);

}  // namespace ort_train
