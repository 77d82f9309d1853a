// Shape rule of TopK: values (input dtype) and int64 indices, the input's shape
// with the axis cut to k (k from the K input from opset 10, the attribute before).
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status topk_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  if (!x) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    ctx.set_output(1, DType::kInt64, std::nullopt);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", -1), static_cast<int64_t>(x->size()), ctx.node()));
  Shape out = *x;
  out[static_cast<size_t>(axis)] = Dim();
  std::optional<int64_t> k;
  if (ctx.opset() < 10) k = ctx.attr_int("k", 0);
  else if (const Tensor* kv = ctx.input_value(1)) k = kv->to_int64_vector().at(0);
  if (k) {
    const Dim& n = (*x)[static_cast<size_t>(axis)];
    if (*k < 0 || (n.known() && *k > n.value))
      return shape_error("{}: k = {} for an axis of size {}", ctx.node().describe(), *k, n.to_string());
    out[static_cast<size_t>(axis)] = Dim(*k);
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  ctx.set_output(1, DType::kInt64, out);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "TopK", 1, 1000, topk_rule, kRuleReadsInput(1));

}  // namespace ort_train
