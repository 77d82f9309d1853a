// Shape rule of ReverseSequence(input, sequence_lens): the input's shape;
// batch_axis and time_axis are 0 and 1 in either order.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status reverse_sequence_rule(InferContext& ctx) {
  const int64_t b = ctx.attr_int("batch_axis", 1), t = ctx.attr_int("time_axis", 0);
  if (!((b == 0 && t == 1) || (b == 1 && t == 0)))
    return invalid_argument("{}: batch_axis and time_axis must be 0 and 1, got {} and {}", ctx.node().describe(), b, t);
  const OptShape& x = ctx.input_shape(0);
  if (x && x->size() < 2) return shape_error("{}: needs an input of rank >= 2", ctx.node().describe());
  ctx.propagate(0, 0);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "ReverseSequence", 10, 1000, reverse_sequence_rule, kPlainOp);

}  // namespace ort_train
