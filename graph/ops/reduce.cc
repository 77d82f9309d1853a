// Shape rules: ReduceMean ReduceSum ReduceMax ReduceMin (and ReduceProd,
// ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSumExp, which share the kernel;
// ReduceLogSum, the log of ReduceSum's).
#include "graph/ops/reduce.h"

#include "graph/op_schema.h"

namespace ort_train {

Result<ReduceAxes> resolve_reduce_axes(const Node& node, int64_t opset, int64_t rank, const Tensor* axes_input,
                                       bool axes_input_present) {
  ReduceAxes r;
  r.keepdims = node.attr_int("keepdims", 1) != 0;
  bool axes_as_input = node.op_type == "ReduceSum" ? opset >= 13 : opset >= 18;
  std::vector<int64_t> axes;
  if (axes_as_input) {
    if (axes_input) axes = axes_input->to_int64_vector();
  } else {
    axes = node.attr_ints("axes");
  }
  (void)axes_input_present;
  r.reduced.assign(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    if (axes_as_input && node.attr_int("noop_with_empty_axes", 0) != 0) {
      r.noop = true;
      return r;
    }
    r.reduced.assign(static_cast<size_t>(rank), true);
    return r;
  }
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t ax, normalize_axis(a, rank, node));
    r.reduced[ax] = true;
  }
  return r;
}

namespace {

Status reduce_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  DType dt = ctx.input_dtype(0);
  bool axes_as_input = ctx.node().op_type == "ReduceSum" ? ctx.opset() >= 13 : ctx.opset() >= 18;
  if (!in || (axes_as_input && ctx.has_input(1) && !ctx.input_value(1))) {
    bool keep = ctx.attr_int("keepdims", 1) != 0;
    ctx.set_output(0, dt, in && keep ? OptShape(Shape(in->size(), Dim())) : std::nullopt);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(auto r, resolve_reduce_axes(ctx.node(), ctx.opset(), static_cast<int64_t>(in->size()),
                                               ctx.input_value(1), ctx.has_input(1)));
  if (r.noop) {
    ctx.propagate(0, 0);
    return Status::Ok();
  }
  Shape out;
  for (size_t d = 0; d < in->size(); ++d) {
    if (!r.reduced[d]) out.push_back((*in)[d]);
    else if (r.keepdims) out.emplace_back(1);
  }
  ctx.set_output(0, dt, std::move(out));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "ReduceMean", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceSum", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceMax", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceMin", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceProd", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceSumSquare", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceL1", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceL2", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceLogSumExp", 1, 1000, reduce_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "ReduceLogSum", 1, 1000, reduce_rule, kRuleReadsInput(1));

std::vector<bool> sum_to_axes(const Dims& x, const Dims& target) {
  size_t lead = x.size() - target.size();
  std::vector<bool> reduced(x.size(), true);
  for (size_t i = 0; i < target.size(); ++i) reduced[lead + i] = target[i] == 1 && x[lead + i] != 1;
  return reduced;
}

}  // namespace ort_train
