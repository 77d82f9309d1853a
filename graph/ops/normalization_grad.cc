// Shape rules of LayerNormalizationGrad and BatchNormalizationGrad
// (com.ort_train): (dX, dScale, dBias) shaped like X, Scale, Scale.
// Kernels in runtime/cpu/kernels/normalization_grad.cc.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

Status norm_grad_outputs(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(1));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_dtype(2), ctx.input_shape(2));
  return Status::Ok();
}

// (dY, X, Scale, [Mean,] InvStdDev): rows before `axis`, each of n elements;
// the statistics hold one value per row, Scale n (or 1).
Status layer_norm_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_shape(ctx, 0, 1, "dY"));
  const OptShape& x = ctx.input_shape(1);
  if (x) {
    int64_t rank = static_cast<int64_t>(x->size());
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", -1), rank, ctx.node()));
    auto elements = [&](int64_t from, int64_t to) {
      return known_elements(Shape(x->begin() + from, x->begin() + to)).value_or(-1);
    };
    RETURN_IF_ERROR(require_elements(ctx, 2, Dim(elements(axis, rank)), "Scale", /*or_one=*/true));
    for (size_t k = 3; k < ctx.num_inputs(); ++k)
      RETURN_IF_ERROR(require_elements(ctx, k, Dim(elements(0, axis)), "the statistics (one per row)"));
  }
  return norm_grad_outputs(ctx);
}

// (dY, X, Scale, Mean, Var): one Scale, Mean and Var value per channel (X's dim 1).
Status batch_norm_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_shape(ctx, 0, 1, "dY"));
  const OptShape& x = ctx.input_shape(1);
  if (x && x->size() < 2) return shape_error("{}: X must be [N, C, ...]", ctx.node().describe());
  if (x)
    for (size_t k = 2; k < 5; ++k)
      RETURN_IF_ERROR(require_elements(ctx, k, (*x)[1], "Scale, Mean and Var (one per channel)"));
  return norm_grad_outputs(ctx);
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "LayerNormalizationGrad", 1, 1000, layer_norm_grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "SimplifiedLayerNormalizationGrad", 1, 1000, layer_norm_grad_rule,
                kPlainOp);  // (dX, dScale)
ORT_REGISTER_OP(kOrtTrainDomain, "BatchNormalizationGrad", 1, 1000, batch_norm_grad_rule, kPlainOp);

}  // namespace ort_train
