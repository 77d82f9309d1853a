// Shape rule: Slice (attributes before opset 10, inputs after).
#include "graph/ops/slice.h"

#include <algorithm>

#include "graph/op_schema.h"

namespace ort_train {

Result<std::vector<SliceAxis>> resolve_slice(const Node& node, const Dims& dims, const std::vector<int64_t>& starts,
                                             const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                                             std::vector<int64_t> steps) {
  int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<SliceAxis> out(dims.size());
  for (int64_t d = 0; d < rank; ++d) out[d] = {0, 1, dims[d]};
  if (starts.size() != ends.size())
    return shape_error("{}: starts has {} values but ends has {}", node.describe(), starts.size(), ends.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return shape_error("{}: starts, ends, axes and steps must have the same length", node.describe());
  if (rank == 0 && !axes.empty()) return shape_error("{}: a scalar cannot be sliced", node.describe());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t ax, normalize_axis(axes[i], rank, node));
    if (seen[ax]) return invalid_argument("{}: axis {} is sliced twice", node.describe(), axes[i]);
    seen[ax] = true;
    int64_t d = dims[ax], step = steps[i];
    if (step == 0) return invalid_argument("{}: step must not be zero", node.describe());
    if (d == 0) {
      out[ax] = {0, 1, 0};
      continue;
    }
    // A step longer than the axis takes at most one element whatever its size; bounding
    // it keeps the count arithmetic and the kernel's strides from overflowing.
    step = std::clamp<int64_t>(step, -d, d);
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += d;
    if (e < 0) e += d;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
    }
    int64_t count = step > 0 ? (e - s + step - 1) / step : (s - e + (-step) - 1) / (-step);
    out[ax] = {s, step, std::max<int64_t>(0, count)};
  }
  return out;
}

namespace {

Status slice_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const OptShape& in = ctx.input_shape(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    const Tensor *s = ctx.input_value(1), *e = ctx.input_value(2);
    bool axes_known = !ctx.has_input(3) || ctx.input_value(3);
    bool steps_known = !ctx.has_input(4) || ctx.input_value(4);
    if (!in || !s || !e || !axes_known || !steps_known) {
      // Bounds computed at run time (Llama's rotate_half slices the head dim
      // at Shape(x)[-1] / 2): only the sliced axes are unknown, when the axes are.
      OptShape out = in ? OptShape(Shape(in->size(), Dim())) : std::nullopt;
      if (in && ctx.has_input(3) && ctx.input_value(3)) {
        out = *in;
        auto rank = static_cast<int64_t>(in->size());
        for (int64_t a : ctx.input_value(3)->to_int64_vector()) {
          if (a < -rank || a >= rank) return shape_error("{}: axis {} out of range for rank {}", ctx.node().describe(), a, rank);
          (*out)[static_cast<size_t>(a < 0 ? a + rank : a)] = Dim();
        }
      }
      ctx.set_output(0, dt, std::move(out));
      return Status::Ok();
    }
    starts = s->to_int64_vector();
    ends = e->to_int64_vector();
    if (ctx.input_value(3)) axes = ctx.input_value(3)->to_int64_vector();
    if (ctx.input_value(4)) steps = ctx.input_value(4)->to_int64_vector();
  }
  if (!in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  // Unknown dims resolve only where the slice does not touch them.
  Dims dims;
  for (const Dim& d : *in) dims.push_back(d.known() ? d.value : INT64_MAX / 4);
  ASSIGN_OR_RETURN(auto r, resolve_slice(ctx.node(), dims, starts, ends, axes, steps));
  Shape out;
  for (size_t d = 0; d < in->size(); ++d) {
    bool touched = !(r[d].start == 0 && r[d].step == 1 && r[d].count == dims[d]);
    out.push_back(!(*in)[d].known() ? (touched ? Dim() : (*in)[d]) : Dim(r[d].count));
  }
  ctx.set_output(0, dt, std::move(out));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Slice", 1, 1000, slice_rule, kRuleReadsInput(1) | kRuleReadsInput(2) | kRuleReadsInput(3) | kRuleReadsInput(4));

}  // namespace ort_train
