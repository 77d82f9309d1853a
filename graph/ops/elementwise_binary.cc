// Shape rules: binary and variadic elementwise ops with broadcasting.
//   Add Sub Mul Div Pow Mod -> dtype of A, broadcast shape
//   Equal Less Greater And Or -> bool, broadcast shape
//   Max Min Sum Mean (variadic) -> dtype of input 0, broadcast shape of all inputs
//   Where(cond, X, Y)    -> dtype of X, broadcast shape of all three
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

Status infer_broadcast(InferContext& ctx, size_t first_value_input, DType out_dtype) {
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const OptShape& s = ctx.input_shape(i);
    if (!s) {
      ctx.set_output(0, out_dtype, std::nullopt);
      return Status::Ok();
    }
    shapes.push_back(&*s);
  }
  (void)first_value_input;
  if (shapes.empty()) return invalid_argument("{}: needs at least one input", ctx.node().describe());
  ASSIGN_OR_RETURN(Shape out, broadcast_shapes(shapes, ctx.node()));
  ctx.set_output(0, out_dtype, std::move(out));
  return Status::Ok();
}

Status same_dtype_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_dtype(ctx, 0));
  return infer_broadcast(ctx, 0, ctx.input_dtype(0));
}

// Mod: floats need fmod = 1 (C's fmod), as the ONNX spec says; integers take either.
Status mod_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (dtype_is_float(dt) && ctx.node().attr_int("fmod", 0) != 1)
    return invalid_argument("{}: Mod of {} needs fmod=1 (ONNX allows fmod=0 for integers only)",
                            ctx.node().describe(), dtype_name(dt));
  return same_dtype_rule(ctx);
}

Status pow_rule(InferContext& ctx) { return infer_broadcast(ctx, 0, ctx.input_dtype(0)); }
// Comparisons read both operands as input 0's type; And, Or and Xor take bools.
Status bool_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_dtype(ctx, 0));
  return infer_broadcast(ctx, 0, DType::kBool);
}
Status logical_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_dtype(ctx, 0, DType::kBool, "the first operand"));
  return bool_rule(ctx);
}
// The kernel reads the condition as bools and Y as X's type.
Status where_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_dtype(ctx, 0, DType::kBool, "the condition"));
  RETURN_IF_ERROR(require_same_dtype(ctx, 1));
  return infer_broadcast(ctx, 1, ctx.input_dtype(1));
}

}  // namespace

ORT_REGISTER_OP("", "Add", 7, 1000, same_dtype_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP("", "Sub", 7, 1000, same_dtype_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP("", "Mul", 7, 1000, same_dtype_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP("", "Div", 7, 1000, same_dtype_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP("", "Mod", 10, 1000, mod_rule, kPlainOp);
ORT_REGISTER_OP("", "Pow", 7, 1000, pow_rule, kPlainOp);
ORT_REGISTER_OP("", "Equal", 7, 1000, bool_rule, kPlainOp);
ORT_REGISTER_OP("", "Less", 7, 1000, bool_rule, kPlainOp);
ORT_REGISTER_OP("", "Greater", 7, 1000, bool_rule, kPlainOp);
ORT_REGISTER_OP("", "LessOrEqual", 12, 1000, bool_rule, kPlainOp);
ORT_REGISTER_OP("", "GreaterOrEqual", 12, 1000, bool_rule, kPlainOp);
ORT_REGISTER_OP("", "And", 7, 1000, logical_rule, kPlainOp);
ORT_REGISTER_OP("", "Or", 7, 1000, logical_rule, kPlainOp);
ORT_REGISTER_OP("", "Xor", 7, 1000, logical_rule, kPlainOp);
ORT_REGISTER_OP("", "Max", 8, 1000, same_dtype_rule, kPlainOp);
ORT_REGISTER_OP("", "Min", 8, 1000, same_dtype_rule, kPlainOp);
ORT_REGISTER_OP("", "Sum", 8, 1000, same_dtype_rule, kPlainOp | kSixteenBitEveryInput);
ORT_REGISTER_OP("", "Mean", 8, 1000, same_dtype_rule, kPlainOp);
ORT_REGISTER_OP("", "Where", 9, 1000, where_rule, kPlainOp);

}  // namespace ort_train
