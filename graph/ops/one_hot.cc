// Shape rules of OneHot (indices, depth, values [off, on]; axis inserts the
// depth, -1 by default; the values' dtype) and EyeLike (the input's shape, the
// `dtype` attribute's type or the input's).
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status one_hot_rule(InferContext& ctx) {
  const OptShape& idx = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(2);
  const Tensor* depth = ctx.input_value(1);
  if (!idx) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  const int64_t rank = static_cast<int64_t>(idx->size()) + 1;
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", -1), rank, ctx.node()));
  Dim d;
  if (depth) {
    if (depth->numel() != 1) return shape_error("{}: depth must hold one value", ctx.node().describe());
    double v = depth->to_double_vector()[0];
    if (!(v >= 1)) return invalid_argument("{}: depth must be positive, got {}", ctx.node().describe(), v);
    d = Dim(static_cast<int64_t>(v));
  }
  Shape out(idx->begin(), idx->end());
  out.insert(out.begin() + axis, d);
  ctx.set_output(0, dt, std::move(out));
  return Status::Ok();
}

Status eye_like_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  if (x && x->size() != 2) return shape_error("{}: EyeLike takes a 2-D input", ctx.node().describe());
  const Attribute* a = ctx.node().attr("dtype");
  ctx.set_output(0, a ? dtype_from_onnx(static_cast<int32_t>(a->i)) : ctx.input_dtype(0), x);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "OneHot", 9, 1000, one_hot_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "EyeLike", 9, 1000, eye_like_rule, kPlainOp);

}  // namespace ort_train
