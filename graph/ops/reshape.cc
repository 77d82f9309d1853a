// Shape rules for the view ops: Reshape, Flatten, Squeeze, Unsqueeze.
// Their kernels alias the input's storage, so only the shape changes here.
#include <algorithm>
#include <string>

#include "graph/op_schema.h"

namespace ort_train {
namespace {

// The size -1 stands for in Reshape: the input's dims over the output's other dims.
// Symbols that appear on both sides cancel ([batch, 12, 64] -> [batch, -1] is 768,
// [batch, 12, 64] -> [-1, 768] is batch); anything else stays unknown.
Result<Dim> inferred_dim(const Shape& in, const Shape& out, size_t infer_at, const Node& node) {
  int64_t in_known = 1, out_known = 1;
  std::vector<std::string> symbols;  // the input's, less those matched in the output
  for (const Dim& d : in) {
    if (d.known()) in_known = mul_saturating(in_known, d.value);
    else if (d.symbol.empty()) return Dim();
    else symbols.push_back(d.symbol);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == infer_at) continue;
    if (out[i].known()) {
      out_known = mul_saturating(out_known, out[i].value);
      continue;
    }
    auto it = std::find(symbols.begin(), symbols.end(), out[i].symbol);
    if (out[i].symbol.empty() || it == symbols.end()) return Dim();
    symbols.erase(it);
  }
  if (symbols.empty()) {
    if (out_known == 0 || in_known % out_known != 0)
      return shape_error("{}: cannot reshape {} elements into {}", node.describe(), in_known, shape_to_string(out));
    return Dim(in_known / out_known);
  }
  if (symbols.size() == 1 && in_known == out_known) return Dim(symbols[0]);
  return Dim();
}

Status reshape_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const Tensor* target = ctx.input_value(1);
  if (!target && ctx.input_dim_values(1) && !ctx.input_dim_values(1)->scalar) {
    // A target computed from shapes: its elements as far as they are known.
    const Shape& want = ctx.input_dim_values(1)->elements;
    const OptShape& in = ctx.input_shape(0);
    bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
    Shape out;
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i].known() && want[i].value == 0 && !allowzero)
        out.push_back(in && i < in->size() ? (*in)[i] : Dim());
      else
        out.push_back(want[i]);
    }
    if (auto at = ctx.input_dim_values(1)->minus_one; at && in && *at < out.size()) {
      ASSIGN_OR_RETURN(out[*at], inferred_dim(*in, out, *at, ctx.node()));
    }
    ctx.set_output(0, dt, std::move(out));
    return Status::Ok();
  }
  if (!target) {
    const OptShape& ts = ctx.input_shape(1);
    if (ts && ts->size() == 1 && (*ts)[0].known()) ctx.set_output(0, dt, Shape(static_cast<size_t>((*ts)[0].value), Dim()));
    else ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  std::vector<int64_t> want = target->to_int64_vector();
  bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  const OptShape& in = ctx.input_shape(0);
  Shape out;
  int64_t infer_at = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t v = want[i];
    if (v == -1) {
      if (infer_at >= 0) return shape_error("{}: more than one -1 in the target shape", ctx.node().describe());
      infer_at = static_cast<int64_t>(i);
      out.emplace_back();
    } else if (v == 0 && !allowzero) {
      if (!in) out.emplace_back();
      else if (i >= in->size()) return shape_error("{}: 0 at position {} but the input has rank {}", ctx.node().describe(), i, in->size());
      else out.push_back((*in)[i]);
    } else if (v < 0) {
      return shape_error("{}: invalid dimension {} in the target shape", ctx.node().describe(), v);
    } else {
      out.emplace_back(v);
    }
  }
  if (allowzero && infer_at >= 0 && std::find(want.begin(), want.end(), 0) != want.end())
    return shape_error("{}: with allowzero=1 the target shape cannot hold both 0 and -1", ctx.node().describe());
  if (infer_at >= 0 && in) {
    ASSIGN_OR_RETURN(out[infer_at], inferred_dim(*in, out, static_cast<size_t>(infer_at), ctx.node()));
  }
  if (in && shape_fully_known(*in) && shape_fully_known(out) &&
      num_elements(dims_from_shape(*in)) != num_elements(dims_from_shape(out)))
    return shape_error("{}: cannot reshape {} into {}", ctx.node().describe(), shape_to_string(in), shape_to_string(out));
  ctx.set_output(0, dt, std::move(out));
  return Status::Ok();
}

Dim product(const Shape& s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) {
    if (!s[i].known()) return Dim();
    p = mul_saturating(p, s[i].value);
  }
  return Dim(p);
}

Status flatten_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, ctx.input_dtype(0), Shape{Dim(), Dim()});
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return shape_error("{}: axis out of range for rank {}", ctx.node().describe(), rank);
  ctx.set_output(0, ctx.input_dtype(0), Shape{product(*in, 0, axis), product(*in, axis, rank)});
  return Status::Ok();
}

Status squeeze_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  auto axes = ctx.opset() >= 13 ? ctx.ints_from_input_or_attr(1, "") : std::optional(ctx.attr_ints("axes"));
  if (!in || !axes) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  std::vector<bool> drop(in->size(), false);
  if (axes->empty()) {
    for (size_t i = 0; i < in->size(); ++i) {
      if (!(*in)[i].known()) {
        ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
        return Status::Ok();
      }
      drop[i] = (*in)[i].value == 1;
    }
  }
  for (int64_t a : *axes) {
    if (rank == 0) return shape_error("{}: a scalar has no axis {} to squeeze", ctx.node().describe(), a);
    ASSIGN_OR_RETURN(int64_t ax, normalize_axis(a, rank, ctx.node()));
    if ((*in)[ax].known() && (*in)[ax].value != 1)
      return shape_error("{}: cannot squeeze axis {} of size {}", ctx.node().describe(), a, (*in)[ax].value);
    drop[ax] = true;
  }
  Shape out;
  for (size_t i = 0; i < in->size(); ++i)
    if (!drop[i]) out.push_back((*in)[i]);
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

Status unsqueeze_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  if (ctx.opset() >= 13 ? !ctx.has_input(1) : !ctx.has_attr("axes"))
    return invalid_argument("{}: Unsqueeze needs axes", ctx.node().describe());
  auto axes = ctx.opset() >= 13 ? ctx.ints_from_input_or_attr(1, "") : std::optional(ctx.attr_ints("axes"));
  if (!in || !axes) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  int64_t out_rank = static_cast<int64_t>(in->size() + axes->size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : *axes) {
    ASSIGN_OR_RETURN(int64_t ax, normalize_axis(a, out_rank, ctx.node()));
    if (inserted[ax]) return shape_error("{}: axis {} repeated", ctx.node().describe(), a);
    inserted[ax] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? Dim(1) : (*in)[j++]);
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Reshape", 5, 1000, reshape_rule, kViewOp | kRuleReadsInput(1) | kSixteenBitInput(0));
ORT_REGISTER_OP("", "Flatten", 1, 1000, flatten_rule, kViewOp | kSixteenBitInput(0));
ORT_REGISTER_OP("", "Squeeze", 1, 1000, squeeze_rule, kViewOp | kRuleReadsInput(1) | kSixteenBitInput(0));
ORT_REGISTER_OP("", "Unsqueeze", 1, 1000, unsqueeze_rule, kViewOp | kRuleReadsInput(1) | kSixteenBitInput(0));

}  // namespace ort_train
