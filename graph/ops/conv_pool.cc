// Shape rules: Conv, MaxPool, AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"
#include "graph/ops/window_geometry.h"

namespace ort_train {

Result<int64_t> lp_pool_order(const Node& node, int64_t opset) {
  int64_t p = opset < 2 ? static_cast<int64_t>(node.attr_float("p", 2.f)) : node.attr_int("p", 2);
  if (p < 1) return invalid_argument("{}: p must be 1 or more, got {}", node.describe(), p);
  return p;
}

namespace {

// Output [N, channels, out spatial...] when the spatial input dims are known.
Status windowed_rule(InferContext& ctx, Dim channels, const std::vector<int64_t>& kernel, bool pool) {
  const Shape& x = *ctx.input_shape(0);
  Shape out{x[0], channels};
  std::vector<int64_t> spatial;
  bool known = true;
  for (size_t i = 2; i < x.size(); ++i) {
    known = known && x[i].known();
    spatial.push_back(x[i].value);
  }
  if (!known || kernel.empty()) {
    for (size_t i = 2; i < x.size(); ++i) out.emplace_back();
  } else {
    ASSIGN_OR_RETURN(auto geo, window_geometry(ctx.node(), spatial, kernel, pool));
    for (const WindowDim& w : geo) out.emplace_back(w.out);
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  if (pool && ctx.num_outputs() > 1) ctx.set_output(1, DType::kInt64, out);
  return Status::Ok();
}

Status conv_rule(InferContext& ctx) {
  const OptShape &x = ctx.input_shape(0), &w = ctx.input_shape(1);
  if (!x || !w) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  if (x->size() < 3 || w->size() != x->size())
    return shape_error("{}: X {} and W {} must both be [N, C, spatial...]", ctx.node().describe(), shape_to_string(x),
                       shape_to_string(w));
  ASSIGN_OR_RETURN(int64_t group, conv_group(ctx.node()));
  if ((*w)[0].known() && (*w)[0].value % group != 0)
    return shape_error("{}: {} output channels do not divide into {} groups", ctx.node().describe(), (*w)[0].value,
                       group);
  if ((*x)[1].known() && (*w)[1].known() && (*x)[1].value != mul_saturating((*w)[1].value, group))
    return shape_error("{}: input has {} channels but W expects {} x group {}", ctx.node().describe(), (*x)[1].value,
                       (*w)[1].value, group);
  RETURN_IF_ERROR(require_elements(ctx, 2, (*w)[0], "the bias (one per output channel)"));
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.empty())
    for (size_t i = 2; i < w->size(); ++i) {
      if (!(*w)[i].known()) return windowed_rule(ctx, (*w)[0], {}, false);
      kernel.push_back((*w)[i].value);
    }
  return windowed_rule(ctx, (*w)[0], kernel, false);
}

Status pool_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  if (!x) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  if (x->size() < 3) return shape_error("{}: input must be [N, C, spatial...]", ctx.node().describe());
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.empty()) return invalid_argument("{}: kernel_shape is required", ctx.node().describe());
  return windowed_rule(ctx, (*x)[1], kernel, true);
}

Status lp_pool_rule(InferContext& ctx) {
  RETURN_IF_ERROR(lp_pool_order(ctx.node(), ctx.opset()).status());
  return pool_rule(ctx);
}

Status global_lp_pool_rule(InferContext& ctx);

Status global_pool_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  if (!x) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  Shape out{(*x)[0], (*x)[1]};
  for (size_t i = 2; i < x->size(); ++i) out.emplace_back(1);
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status global_lp_pool_rule(InferContext& ctx) {
  RETURN_IF_ERROR(lp_pool_order(ctx.node(), ctx.opset()).status());
  return global_pool_rule(ctx);
}

}  // namespace

ORT_REGISTER_OP("", "Conv", 1, 1000, conv_rule, kPlainOp);
ORT_REGISTER_OP("", "MaxPool", 1, 1000, pool_rule, kPlainOp);
ORT_REGISTER_OP("", "AveragePool", 1, 1000, pool_rule, kPlainOp);
ORT_REGISTER_OP("", "GlobalAveragePool", 1, 1000, global_pool_rule, kPlainOp);
ORT_REGISTER_OP("", "GlobalMaxPool", 1, 1000, global_pool_rule, kPlainOp);
ORT_REGISTER_OP("", "LpPool", 1, 1000, lp_pool_rule, kPlainOp);
ORT_REGISTER_OP("", "GlobalLpPool", 1, 1000, global_lp_pool_rule, kPlainOp);

}  // namespace ort_train
