// Shape rules: Expand (bidirectional broadcast to a shape), Tile, Pad.
#include <algorithm>

#include "graph/op_schema.h"
#include "graph/ops/pad.h"

namespace ort_train {

Result<std::vector<int64_t>> pad_amounts(const Node& node, int64_t opset, int64_t rank, const Tensor* pads,
                                         const Tensor* axes) {
  std::vector<int64_t> p = opset < 11 ? node.attr_ints(opset < 2 ? "paddings" : "pads") : pads->to_int64_vector();
  std::vector<int64_t> ax;
  if (axes) ax = axes->to_int64_vector();
  if (ax.empty())
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  if (p.size() != 2 * ax.size())
    return shape_error("{}: pads has {} values, expected {}", node.describe(), p.size(), 2 * ax.size());
  // No real padding comes near 2^62; the bound keeps every sum and index
  // offset the rule and kernels form inside int64.
  constexpr int64_t kMaxPad = int64_t{1} << 62;
  for (int64_t v : p)
    if (v > kMaxPad || v < -kMaxPad) return shape_error("{}: pads value {} is out of range", node.describe(), v);
  std::vector<int64_t> out(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < ax.size(); ++i) {
    if (rank == 0) return shape_error("{}: a scalar has no axis {} to pad", node.describe(), ax[i]);
    ASSIGN_OR_RETURN(int64_t a, normalize_axis(ax[i], rank, node));
    out[a] = p[i];
    out[a + rank] = p[i + ax.size()];
  }
  return out;
}

namespace {

Status expand_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  const Tensor* shape = ctx.input_value(1);
  const OptShape& shape_shape = ctx.input_shape(1);
  if (in && !shape && ctx.input_dim_values(1) && !ctx.input_dim_values(1)->scalar) {
    // A target computed from shapes (Llama's repeat_kv): broadcast dim by dim
    // as far as its elements are known.
    const DimValues& want = *ctx.input_dim_values(1);
    size_t rank = std::max(in->size(), want.elements.size());
    Shape out(rank, Dim());
    const size_t from_in = rank - in->size(), from_t = rank - want.elements.size();  // leading dims each lacks
    for (size_t i = 0; i < rank; ++i) {
      Dim a = i >= from_in ? (*in)[i - from_in] : Dim(1);
      Dim t = i < from_t ? Dim(1) : want.minus_one == i - from_t ? Dim() : want.elements[i - from_t];
      if (t.known() && t.value == 1) out[i] = a;
      else if (a.known() && a.value == 1) out[i] = t;
      else if (a.known() && t.known() && a.value != t.value)
        return shape_error("{}: cannot expand axis {} of size {} to {}", ctx.node().describe(), i, a.value, t.value);
      else if (a.known() || (!a.symbol.empty() && a == t)) out[i] = a;  // a valid target is 1 or a
      else if (t.known()) out[i] = t;  // a (unknown) is 1 or t
    }
    ctx.set_output(0, ctx.input_dtype(0), std::move(out));
    return Status::Ok();
  }
  if (in && !shape && shape_shape && shape_shape->size() == 1 && (*shape_shape)[0].known()) {
    // The target's length gives the rank; a known input dim other than 1 survives any valid target.
    size_t rank = std::max(in->size(), static_cast<size_t>((*shape_shape)[0].value));
    Shape out(rank, Dim());
    for (size_t i = 0; i < in->size(); ++i)
      if ((*in)[i].known() && (*in)[i].value != 1) out[rank - in->size() + i] = (*in)[i];
    ctx.set_output(0, ctx.input_dtype(0), std::move(out));
    return Status::Ok();
  }
  if (!in || !shape) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  Shape target;
  for (int64_t d : shape->to_int64_vector()) target.emplace_back(d);
  ASSIGN_OR_RETURN(Shape out, broadcast_shapes({&*in, &target}, ctx.node()));
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

Status tile_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  const Tensor* reps = ctx.input_value(1);
  if (!in || !reps) {
    ctx.set_output(0, ctx.input_dtype(0), in ? OptShape(Shape(in->size(), Dim())) : std::nullopt);
    return Status::Ok();
  }
  std::vector<int64_t> r = reps->to_int64_vector();
  if (r.size() != in->size())
    return shape_error("{}: repeats has {} values for an input of rank {}", ctx.node().describe(), r.size(), in->size());
  Shape out;
  for (size_t d = 0; d < r.size(); ++d) {
    if (r[d] < 0) return shape_error("{}: negative repeat {}", ctx.node().describe(), r[d]);
    out.push_back((*in)[d].known() ? Dim(mul_saturating((*in)[d].value, r[d])) : Dim());
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

Status pad_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  bool pads_known = ctx.opset() < 11 || ctx.input_value(1);
  bool axes_known = ctx.opset() < 18 || !ctx.has_input(3) || ctx.input_value(3);
  if (!in || !pads_known || !axes_known) {
    ctx.set_output(0, ctx.input_dtype(0), in ? OptShape(Shape(in->size(), Dim())) : std::nullopt);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  ASSIGN_OR_RETURN(auto p, pad_amounts(ctx.node(), ctx.opset(), rank, ctx.input_value(1),
                                       ctx.opset() >= 18 ? ctx.input_value(3) : nullptr));
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!(*in)[d].known()) {
      out.push_back(p[d] == 0 && p[d + rank] == 0 ? (*in)[d] : Dim());
      continue;
    }
    int64_t v = 0;
    if (__builtin_add_overflow((*in)[d].value, p[d], &v) || __builtin_add_overflow(v, p[d + rank], &v))
      return shape_error("{}: padding axis {} by ({}, {}) overflows its size", ctx.node().describe(), d, p[d],
                         p[d + rank]);
    if (v < 0) return shape_error("{}: padding makes axis {} negative", ctx.node().describe(), d);
    out.emplace_back(v);
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Expand", 8, 1000, expand_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "Tile", 6, 1000, tile_rule, kRuleReadsInput(1));
ORT_REGISTER_OP("", "Pad", 2, 1000, pad_rule, kRuleReadsInput(1) | kRuleReadsInput(3));

}  // namespace ort_train
