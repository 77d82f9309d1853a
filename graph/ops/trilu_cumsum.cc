// Shape rules: Trilu and CumSum keep the input's dtype and shape.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status trilu_rule(InferContext& ctx) {
  if (ctx.input_rank(0) >= 0 && ctx.input_rank(0) < 2)
    return shape_error("{}: input must have rank >= 2", ctx.node().describe());
  ctx.propagate(0, 0);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Trilu", 14, 1000, trilu_rule);
ORT_REGISTER_OP("", "CumSum", 11, 1000, same_as_input0);

}  // namespace ort_train
