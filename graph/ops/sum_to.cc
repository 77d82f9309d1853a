// com.ort_train::SumTo(X, shape) -> Y: X summed over the axes along which
// `shape` was broadcast to X's shape (leading extra axes, and axes where shape
// has 1), so Y has exactly `shape`. The autodiff driver uses it to return a
// broadcast gradient to its input's shape (the reverse of Expand).
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status sum_to_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const Tensor* target = ctx.input_value(1);
  if (!target) {
    const OptShape& ts = ctx.input_shape(1);
    if (ts && ts->size() == 1 && (*ts)[0].known())
      ctx.set_output(0, dt, Shape(static_cast<size_t>((*ts)[0].value), Dim()));
    else
      ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  std::vector<int64_t> want = target->to_int64_vector();
  const OptShape& in = ctx.input_shape(0);
  if (in) {
    if (want.size() > in->size())
      return shape_error("{}: target shape has rank {} above the input's {}", ctx.node().describe(), want.size(),
                         in->size());
    size_t lead = in->size() - want.size();
    for (size_t i = 0; i < want.size(); ++i) {
      const Dim& d = (*in)[lead + i];
      if (want[i] != 1 && d.known() && d.value != want[i])
        return shape_error("{}: cannot sum {} to {}", ctx.node().describe(), shape_to_string(in),
                           shape_to_string(shape_from_dims(want)));
    }
  }
  ctx.set_output(0, dt, shape_from_dims(want));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "SumTo", 1, 1000, sum_to_rule, kRuleReadsInput(1));

}  // namespace ort_train
