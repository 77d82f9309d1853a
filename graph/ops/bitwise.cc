// Shape rules of the bitwise ops on integers: BitwiseAnd, BitwiseOr,
// BitwiseXor (opset 18) and BitShift (opset 11) broadcast like Add;
// BitwiseNot (opset 18) keeps its input's shape. Not differentiable.
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

Status require_integer(const InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (t != DType::kUndefined && !dtype_is_integer(t))
    return shape_error("{}: needs integer operands, got {}", ctx.node().describe(), dtype_name(t));
  return Status::Ok();
}

Status bitwise_binary_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_integer(ctx));
  RETURN_IF_ERROR(require_same_dtype(ctx, 0));
  const OptShape &a = ctx.input_shape(0), &b = ctx.input_shape(1);
  if (!a || !b) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(Shape out, broadcast_shapes({&*a, &*b}, ctx.node()));
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

Status bit_shift_rule(InferContext& ctx) {
  const std::string direction = ctx.node().attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return invalid_argument("{}: direction must be LEFT or RIGHT, got '{}'", ctx.node().describe(), direction);
  return bitwise_binary_rule(ctx);
}

Status bitwise_not_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_integer(ctx));
  ctx.propagate(0, 0);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "BitwiseAnd", 18, 1000, bitwise_binary_rule, kPlainOp);
ORT_REGISTER_OP("", "BitwiseOr", 18, 1000, bitwise_binary_rule, kPlainOp);
ORT_REGISTER_OP("", "BitwiseXor", 18, 1000, bitwise_binary_rule, kPlainOp);
ORT_REGISTER_OP("", "BitwiseNot", 18, 1000, bitwise_not_rule, kPlainOp);
ORT_REGISTER_OP("", "BitShift", 11, 1000, bit_shift_rule, kPlainOp);

}  // namespace ort_train
