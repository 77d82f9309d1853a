// Shape rules of GatherGrad and SliceGrad (com.ort_train): a tensor of dY's
// dtype with the shape given as input 1 (the forward input's shape).
// Kernels in runtime/cpu/kernels/gather_grad.cc and slice_grad.cc.
#include "graph/op_schema.h"
#include "graph/ops/slice.h"

namespace ort_train {
namespace {

Status rule(InferContext& ctx) { return shape_from_value(ctx, 0, 1); }

// The kernel reads dX's dim `axis` and the indices as integers.
Status gather_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(rule(ctx));
  const DType idx = ctx.input_dtype(2);
  if (idx != DType::kUndefined && idx != DType::kInt64 && idx != DType::kInt32)
    return shape_error("{}: the indices must be int32 or int64, not {}", ctx.node().describe(), dtype_name(idx));
  const OptShape& dx = ctx.output(0).shape;
  if (dx) RETURN_IF_ERROR(normalize_axis(ctx.attr_int("axis", 0), static_cast<int64_t>(dx->size()), ctx.node()).status());
  return Status::Ok();
}

// dY must be the slice of `shape` that the forward's starts/ends/axes/steps
// (inputs, or attributes before opset 10) cut: the kernel writes it back there.
Status slice_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(rule(ctx));
  const OptShape& dx = ctx.output(0).shape;
  const OptShape& dy = ctx.input_shape(0);
  if (!dx || !shape_fully_known(*dx) || !dy) return Status::Ok();
  const bool from_attributes = ctx.node().attr("starts") != nullptr;
  if (!from_attributes)
    for (size_t k = 2; k < 6; ++k)
      if (ctx.has_input(k) && !ctx.input_value(k)) return Status::Ok();  // known at run time
  ASSIGN_OR_RETURN(auto cut, resolve_node_slice(ctx.node(), dims_from_shape(*dx), from_attributes, 2,
                                                [&](size_t k) -> Result<std::optional<std::vector<int64_t>>> {
                                                  if (!ctx.has_input(k)) return std::optional<std::vector<int64_t>>();
                                                  return std::optional(ctx.input_value(k)->to_int64_vector());
                                                }));
  Shape want;
  for (const SliceAxis& a : cut) want.emplace_back(a.count);
  bool same = dy->size() == want.size();
  for (size_t d = 0; same && d < want.size(); ++d) same = !(*dy)[d].known() || (*dy)[d].value == want[d].value;
  if (!same)
    return shape_error("{}: dY {} is not the slice {} of {}", ctx.node().describe(), shape_to_string(dy),
                       shape_to_string(OptShape(want)), shape_to_string(dx));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "GatherGrad", 1, 1000, gather_grad_rule, kRuleReadsInput(1));
ORT_REGISTER_OP(kOrtTrainDomain, "SliceGrad", 1, 1000, slice_grad_rule, kRuleReadsInput(1) | kRuleReadsInput(2) | kRuleReadsInput(3) | kRuleReadsInput(4) | kRuleReadsInput(5));

}  // namespace ort_train
