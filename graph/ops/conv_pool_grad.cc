// Shape rules of the convolution and pooling gradient ops (com.ort_train).
//   ConvGrad(dY, X, W) -> dX, dW, dB        shaped like X, W and [W.dims[0]]
//   MaxPoolGrad(dY, Indices, shape) -> dX   shape given by input 2's value
//   AveragePoolGrad(dY, shape) -> dX        shape given by input 1's value
// Kernels in runtime/cpu/kernels/conv_grad.cc and pooling_grad.cc.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"
#include "graph/ops/window_geometry.h"

namespace ort_train {
namespace {

Status conv_grad_rule(InferContext& ctx) {
  DType t = ctx.input_dtype(0);
  RETURN_IF_ERROR(require_same_dtype(ctx, 0));  // dY, X and W are read as one type
  RETURN_IF_ERROR(conv_group(ctx.node()).status());
  const OptShape &dy = ctx.input_shape(0), &x = ctx.input_shape(1), &w = ctx.input_shape(2);
  if ((x && x->size() < 3) || (x && w && w->size() != x->size()) || (x && dy && dy->size() != x->size()))
    return shape_error("{}: dY {}, X {} and W {} must all be [N, C, spatial...]", ctx.node().describe(),
                       shape_to_string(dy), shape_to_string(x), shape_to_string(w));
  ctx.set_output(0, t, ctx.input_shape(1));
  if (ctx.num_outputs() > 1) ctx.set_output(1, t, ctx.input_shape(2));
  if (ctx.num_outputs() > 2) {
    const OptShape& w = ctx.input_shape(2);
    ctx.set_output(2, t, w && !w->empty() ? OptShape(Shape{(*w)[0]}) : std::nullopt);
  }
  return Status::Ok();
}

// dX is [N, C, spatial...]: the kernels walk it plane by plane.
Status require_planes(InferContext& ctx) {
  const OptShape& dx = ctx.output(0).shape;
  if (dx && dx->size() < 3)
    return shape_error("{}: dX {} must be [N, C, spatial...]", ctx.node().describe(), shape_to_string(dx));
  return Status::Ok();
}

Status max_pool_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_shape(ctx, 1, 0, "Indices"));
  RETURN_IF_ERROR(require_dtype(ctx, 1, DType::kInt64, "Indices"));
  RETURN_IF_ERROR(shape_from_value(ctx, 0, 2));
  return require_planes(ctx);
}
Status average_pool_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(shape_from_value(ctx, 0, 1));
  return require_planes(ctx);
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "ConvGrad", 1, 1000, conv_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "MaxPoolGrad", 1, 1000, max_pool_grad_rule, kRuleReadsInput(2));
ORT_REGISTER_OP(kOrtTrainDomain, "AveragePoolGrad", 1, 1000, average_pool_grad_rule, kRuleReadsInput(1));

}  // namespace ort_train
