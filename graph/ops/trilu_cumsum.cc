// Shape rules: Trilu and CumSum keep the input's dtype and shape; the rules check
// the scalar inputs (k, axis), so the kernels can read them without checks.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

// A known scalar input must hold exactly one value.
Status check_single_value(const InferContext& ctx, size_t input, const char* what) {
  const Tensor* v = ctx.input_value(input);
  if (v && v->numel() != 1)
    return invalid_argument("{}: {} must hold one value, not {}", ctx.node().describe(), what, v->numel());
  return Status::Ok();
}

Status trilu_rule(InferContext& ctx) {
  if (ctx.input_rank(0) >= 0 && ctx.input_rank(0) < 2)
    return shape_error("{}: input must have rank >= 2", ctx.node().describe());
  RETURN_IF_ERROR(check_single_value(ctx, 1, "k"));
  ctx.propagate(0, 0);
  return Status::Ok();
}

Status cumsum_rule(InferContext& ctx) {
  RETURN_IF_ERROR(check_single_value(ctx, 1, "axis"));
  const Tensor* axis = ctx.input_value(1);
  int64_t rank = ctx.input_rank(0);
  if (axis && rank >= 0) {
    int64_t a = axis->to_int64_vector()[0];
    if (a < -rank || a >= rank)
      return shape_error("{}: axis {} is out of range for rank {}", ctx.node().describe(), a, rank);
  }
  ctx.propagate(0, 0);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Trilu", 14, 1000, trilu_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "CumSum", 11, 1000, cumsum_rule, kRuleReadsInput(1));

}  // namespace ort_train
