// Shape rules of InstanceNormalization, GroupNormalization and their gradient
// com.ort_train GroupNormGrad(dY, X, scale) -> (dX, dscale, dbias); the
// geometry all their kernels share (graph/ops/group_norm.h).
#include "graph/ops/group_norm.h"

#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {

Result<GroupNormGeometry> group_norm_geometry(const Node& node, int64_t opset, const Dims& x) {
  if (x.size() < 2) return shape_error("{}: needs X of rank >= 2 [N, C, ...]", node.describe());
  GroupNormGeometry g;
  g.batch = x[0];
  g.channels = x[1];
  for (size_t i = 2; i < x.size(); ++i) g.spatial *= x[i];
  g.epsilon = node.attr_float("epsilon", 1e-5f);
  if (node.op_type == "InstanceNormalization") {
    g.groups = g.channels;
  } else if (node.op_type == "GroupNormalization") {
    g.groups = node.attr_int("num_groups", 0);
    g.affine_per_group = opset < 21;
  } else {  // GroupNormGrad
    g.groups = node.attr_int("num_groups", 0);
    if (g.groups == 0) g.groups = g.channels;
    g.affine_per_group = node.attr_int("affine_per_group", 0) != 0;
  }
  if (g.groups <= 0 || g.channels % g.groups != 0)
    return shape_error("{}: {} channels do not split into {} groups", node.describe(), g.channels, g.groups);
  return g;
}

namespace {

Status group_norm_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kUndefined)
    return unsupported("{}: {} takes float32 or float64, got {}", ctx.node().describe(), ctx.node().op_type,
                       dtype_name(dt));
  const OptShape& x = ctx.input_shape(0);
  if (x && shape_fully_known(*x)) {
    ASSIGN_OR_RETURN(GroupNormGeometry g, group_norm_geometry(ctx.node(), ctx.opset(), dims_from_shape(*x)));
    for (size_t i = 1; i <= 2; ++i) {
      const OptShape& p = ctx.input_shape(i);
      if (p && shape_fully_known(*p) && (p->size() != 1 || (*p)[0].value != g.affine_size()))
        return shape_error("{}: {} must be 1-D of {}, got {}", ctx.node().describe(), i == 1 ? "scale" : "bias",
                           g.affine_size(), shape_to_string(p));
    }
  }
  ctx.propagate(0, 0);
  return Status::Ok();
}

Status group_norm_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_dtype(ctx, 0));  // dY, X, scale: read as one type
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(1));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_dtype(2), ctx.input_shape(2));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "InstanceNormalization", 6, 1000, group_norm_rule, kPlainOp);
ORT_REGISTER_OP("", "GroupNormalization", 18, 1000, group_norm_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "GroupNormGrad", 1, 1000, group_norm_grad_rule, kPlainOp);

}  // namespace ort_train
