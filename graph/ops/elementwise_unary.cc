// Shape rules for ops whose output has the input's dtype and shape:
// math (Sqrt Exp Log Neg Abs Reciprocal Sin Cos Not), activations (Relu LeakyRelu
// Sigmoid Tanh Erf Gelu), Clip, Softmax/LogSoftmax; plus Cast (new dtype) and
// Dropout (output + optional bool mask).
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status softmax_rule(InferContext& ctx) {
  int64_t rank = ctx.input_rank(0);
  if (rank >= 0) {
    int64_t axis = ctx.attr_int("axis", ctx.opset() >= 13 ? -1 : 1);
    RETURN_IF_ERROR(normalize_axis(axis, std::max<int64_t>(rank, 1), ctx.node()).status());
  }
  ctx.propagate(0, 0);
  return Status::Ok();
}

// The fused ops taking X and a bias B (BiasSoftmax, BiasGelu): float32 or
// float64, the bias of X's type.
Status float_with_bias(InferContext& ctx, const char* op) {
  DType dt = ctx.input_dtype(0);
  if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kUndefined)
    return shape_error("{}: {} takes float32 or float64, got {}", ctx.node().describe(), op, dtype_name(dt));
  if (ctx.input_dtype(1) != dt && ctx.input_dtype(1) != DType::kUndefined && dt != DType::kUndefined)
    return shape_error("{}: the bias is {}, X {}", ctx.node().describe(), dtype_name(ctx.input_dtype(1)), dtype_name(dt));
  return Status::Ok();
}

// com.ort_train BiasSoftmax (bias_softmax_fusion's): Softmax(X + B) over the
// last axis, with numpy broadcasting (attention's mask: [B, 1, 1, T] or
// [B, 1, T, T] against [B, H, T, T] scores).
Status bias_softmax_rule(InferContext& ctx) {
  RETURN_IF_ERROR(float_with_bias(ctx, "BiasSoftmax"));
  DType dt = ctx.input_dtype(0);
  const OptShape &x = ctx.input_shape(0), &b = ctx.input_shape(1);
  if (!x || !b) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(Shape out, broadcast_shapes({&*x, &*b}, ctx.node()));
  if (out.empty()) return shape_error("{}: BiasSoftmax needs operands of rank >= 1", ctx.node().describe());
  ctx.set_output(0, dt, std::move(out));
  return Status::Ok();
}

// com.ort_train BiasGelu (bias_gelu_fusion's): Gelu(X + B) for a 1-D B of X's
// last dim, attribute approximate as Gelu's.
Status bias_gelu_rule(InferContext& ctx) {
  RETURN_IF_ERROR(float_with_bias(ctx, "BiasGelu"));
  const OptShape &x = ctx.input_shape(0), &b = ctx.input_shape(1);
  if (x && x->empty()) return shape_error("{}: BiasGelu needs X of rank >= 1", ctx.node().describe());
  if (b && (b->size() != 1 || (x && (*b)[0].known() && x->back().known() && (*b)[0].value != x->back().value)))
    return shape_error("{}: the bias must be 1-D of X's last dim, got {} for X {}", ctx.node().describe(),
                       shape_to_string(b), shape_to_string(x));
  ctx.propagate(0, 0);
  return Status::Ok();
}

Status cast_rule(InferContext& ctx) {
  const Attribute* to = ctx.node().attr("to");
  if (!to) return invalid_argument("{}: Cast needs the 'to' attribute", ctx.node().describe());
  DType dt = dtype_from_onnx(static_cast<int32_t>(to->i));
  if (dtype_size(dt) == 0) return unsupported("{}: Cast to {} is not supported", ctx.node().describe(), dtype_name(dt));
  ctx.set_output(0, dt, ctx.input_shape(0));
  return Status::Ok();
}

Status cast_like_rule(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0));
  return Status::Ok();
}

Status dropout_rule(InferContext& ctx) {
  ctx.propagate(0, 0);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kBool, ctx.input_shape(0));
  return Status::Ok();
}

// com.ort_train DropoutAdd (dropout_add_fusion's): Dropout(X) + R with
// numpy broadcasting (R is a residual, in practice of X's shape), and
// Dropout's optional mask output, of X's shape.
Status dropout_add_rule(InferContext& ctx) {
  const OptShape &x = ctx.input_shape(0), &r = ctx.input_shape(1);
  DType dt = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != dt && ctx.input_dtype(1) != DType::kUndefined && dt != DType::kUndefined)
    return shape_error("{}: the residual is {}, X {}", ctx.node().describe(), dtype_name(ctx.input_dtype(1)),
                       dtype_name(dt));
  OptShape out;
  if (x && r) { ASSIGN_OR_RETURN(out, broadcast_shapes({&*x, &*r}, ctx.node())); }
  ctx.set_output(0, dt, std::move(out));
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kBool, x);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Sqrt", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Exp", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Log", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Neg", 6, 1000, same_as_input0, kPlainOp | kSixteenBitInput(0));
ORT_REGISTER_OP("", "Abs", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Reciprocal", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Sin", 7, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Cos", 7, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Not", 1, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Relu", 6, 1000, same_as_input0, kPlainOp | kSixteenBitInput(0));
ORT_REGISTER_OP("", "LeakyRelu", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Sigmoid", 6, 1000, same_as_input0, kPlainOp | kSixteenBitInput(0));
ORT_REGISTER_OP("", "Tanh", 6, 1000, same_as_input0, kPlainOp | kSixteenBitInput(0));
ORT_REGISTER_OP("", "Erf", 9, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Softplus", 1, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Atan", 7, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Floor", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Ceil", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Round", 11, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Sign", 9, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Gelu", 20, 1000, same_as_input0, kPlainOp | kSixteenBitInput(0));
ORT_REGISTER_OP(kOrtTrainDomain, "Gelu", 1, 1000, same_as_input0, kPlainOp | kSixteenBitInput(0));  // gelu_fusion's, at any opset
ORT_REGISTER_OP(kOrtTrainDomain, "BiasGelu", 1, 1000, bias_gelu_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "Silu", 1, 1000, same_as_input0, kPlainOp | kSixteenBitInput(0));  // silu_fusion's: x * sigmoid(x)
ORT_REGISTER_OP("", "Clip", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Softmax", 1, 1000, softmax_rule, kPlainOp);
ORT_REGISTER_OP("", "LogSoftmax", 1, 1000, softmax_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "BiasSoftmax", 1, 1000, bias_softmax_rule, kPlainOp);
ORT_REGISTER_OP("", "Cast", 6, 1000, cast_rule, kPlainOp);
ORT_REGISTER_OP("", "CastLike", 15, 1000, cast_like_rule, kPlainOp);
ORT_REGISTER_OP("", "Dropout", 7, 1000, dropout_rule, kRandomOp | kReadsRunOptions | kSixteenBitInput(0));
ORT_REGISTER_OP(kOrtTrainDomain, "DropoutAdd", 1, 1000, dropout_add_rule, kRandomOp | kReadsRunOptions);

}  // namespace ort_train
