// Shape rules of IsNaN and IsInf (detect_negative, detect_positive): a bool
// tensor of the input's shape.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status bool_of_input(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (!dtype_is_float(dt) && dt != DType::kUndefined)
    return unsupported("{}: {} takes a floating-point input, got {}", ctx.node().describe(), ctx.node().op_type,
                       dtype_name(dt));
  ctx.set_output(0, DType::kBool, ctx.input_shape(0));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "IsNaN", 9, 1000, bool_of_input, kPlainOp);
ORT_REGISTER_OP("", "IsInf", 10, 1000, bool_of_input, kPlainOp);

}  // namespace ort_train
