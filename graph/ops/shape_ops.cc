// Shape rules: Shape, Size, Constant, ConstantOfShape, Range, Identity.
// Shape and Constant compute their values here, so later rules (Reshape's
// target, Slice's bounds) can see them at load time.
#include <cmath>
#include <limits>

#include "graph/dispatch.h"
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status shape_rule(InferContext& ctx) {
  const OptShape& s = ctx.input_shape(0);
  if (!s) {
    ctx.set_output(0, DType::kInt64, Shape{Dim()});
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(s->size());
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = clamp(ctx.attr_int("start", 0));
  int64_t end = ctx.has_attr("end") ? clamp(ctx.attr_int("end", rank)) : rank;
  int64_t n = std::max<int64_t>(0, end - start);
  bool known = true;
  std::vector<int64_t> dims;
  for (int64_t i = start; i < start + n; ++i) {
    known = known && (*s)[i].known();
    dims.push_back((*s)[i].value);
  }
  if (known) ctx.set_output_value(0, Tensor::from_vector<int64_t>({n}, dims));
  else ctx.set_output(0, DType::kInt64, Shape{Dim(n)});
  return Status::Ok();
}

Status size_rule(InferContext& ctx) {
  const OptShape& s = ctx.input_shape(0);
  if (s && shape_fully_known(*s)) ctx.set_output_value(0, Tensor::from_vector<int64_t>({}, {num_elements(dims_from_shape(*s))}));
  else ctx.set_output(0, DType::kInt64, Shape{});
  return Status::Ok();
}

Status constant_rule(InferContext& ctx) {
  const Node& n = ctx.node();
  if (const Attribute* a = n.attr("value")) {
    if (!a->t.defined()) return unsupported("{}: the constant's tensor type is not supported", n.describe());
    ctx.set_output_value(0, a->t);
  } else if (const Attribute* f = n.attr("value_float")) {
    ctx.set_output_value(0, Tensor::from_vector<float>({}, {f->f}));
  } else if (const Attribute* fs = n.attr("value_floats")) {
    ctx.set_output_value(0, Tensor::from_vector<float>({static_cast<int64_t>(fs->floats.size())}, fs->floats));
  } else if (const Attribute* i = n.attr("value_int")) {
    ctx.set_output_value(0, Tensor::from_vector<int64_t>({}, {i->i}));
  } else if (const Attribute* is = n.attr("value_ints")) {
    ctx.set_output_value(0, Tensor::from_vector<int64_t>({static_cast<int64_t>(is->ints.size())}, is->ints));
  } else {
    return unsupported("{}: Constant needs value, value_float(s) or value_int(s) (strings and sparse are not supported)",
                       n.describe());
  }
  return Status::Ok();
}

Status constant_of_shape_rule(InferContext& ctx) {
  DType dt = DType::kFloat;
  if (const Attribute* a = ctx.node().attr("value")) {
    if (!a->t.defined() || a->t.numel() != 1)
      return invalid_argument("{}: value must be a one-element tensor", ctx.node().describe());
    dt = a->t.dtype();
  }
  const Tensor* shape = ctx.input_value(0);
  if (!shape) {
    const OptShape& s = ctx.input_shape(0);
    if (s && s->size() == 1 && (*s)[0].known()) ctx.set_output(0, dt, Shape(static_cast<size_t>((*s)[0].value), Dim()));
    else ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  Shape out;
  for (int64_t d : shape->to_int64_vector()) {
    if (d < 0) return shape_error("{}: negative dimension {} in the requested shape", ctx.node().describe(), d);
    out.emplace_back(d);
  }
  ctx.set_output(0, dt, out);
  return Status::Ok();
}

// max(ceil((limit - start) / delta), 0) elements; exact for integer types
// (in 128 bits: INT64_MIN to INT64_MAX by 1 is one past int64's range).
// Refused when the count is not a number a tensor can have: a delta of 1e-30
// or an infinite limit made it infinite, which a cast turned into garbage.
Result<int64_t> range_length(const Node& node, DType dt, const Tensor& s, const Tensor& l, const Tensor& d) {
  constexpr double kMaxCount = 9.2e18;  // just under 2^63
  if (dtype_is_integer(dt)) {
    __int128 start = s.to_int64_vector()[0], limit = l.to_int64_vector()[0], delta = d.to_int64_vector()[0];
    __int128 n = delta > 0 ? (limit > start ? (limit - start + delta - 1) / delta : 0)
                           : (start > limit ? (start - limit - delta - 1) / -delta : 0);
    if (n > static_cast<__int128>(std::numeric_limits<int64_t>::max()))
      return invalid_argument("{}: Range from {} to {} by {} has more elements than a tensor can hold", node.describe(),
                              s.to_int64_vector()[0], l.to_int64_vector()[0], d.to_int64_vector()[0]);
    return static_cast<int64_t>(n);
  }
  double start = s.to_double_vector()[0], limit = l.to_double_vector()[0], delta = d.to_double_vector()[0];
  double n = std::ceil((limit - start) / delta);
  if (std::isnan(n) || n >= kMaxCount)
    return invalid_argument("{}: Range from {} to {} by {} has {} elements, not a size a tensor can have",
                            node.describe(), start, limit, delta, std::isnan(n) ? "an undefined number of" : "too many");
  return std::max<int64_t>(0, static_cast<int64_t>(n));
}

Status range_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.input_dtype(i) != DType::kUndefined && dt != DType::kUndefined && ctx.input_dtype(i) != dt)
      return invalid_argument("{}: start is {} but input {} is {}", ctx.node().describe(), dtype_name(dt), i,
                              dtype_name(ctx.input_dtype(i)));
  const Tensor *s = ctx.input_value(0), *l = ctx.input_value(1), *d = ctx.input_value(2);
  if (!s || !l || !d) {
    // range(0, n, 1) with n a size computed from a shape (Llama's position
    // ids, arange(seq_len)): n elements, whatever n is.
    const DimValues* limit = ctx.input_dim_values(1);
    bool counts = s && d && s->numel() == 1 && d->numel() == 1 && s->to_double_vector()[0] == 0 &&
                  d->to_double_vector()[0] == 1 && limit && limit->elements.size() == 1 && !limit->minus_one;
    ctx.set_output(0, dt, Shape{counts ? limit->elements[0] : Dim()});
    return Status::Ok();
  }
  if (s->numel() != 1 || l->numel() != 1 || d->numel() != 1)
    return shape_error("{}: start, limit and delta must be scalars", ctx.node().describe());
  if (d->to_double_vector()[0] == 0) return invalid_argument("{}: delta must not be zero", ctx.node().describe());
  ASSIGN_OR_RETURN(int64_t n, range_length(ctx.node(), dt, *s, *l, *d));
  ctx.set_output(0, dt, Shape{Dim(n)});
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Shape", 1, 1000, shape_rule, kValueFromRule);
ORT_REGISTER_OP("", "Size", 1, 1000, size_rule, kValueFromRule);
ORT_REGISTER_OP("", "Constant", 1, 1000, constant_rule, kValueFromRule);
ORT_REGISTER_OP("", "ConstantOfShape", 9, 1000, constant_of_shape_rule, kRuleReadsInput(0));
ORT_REGISTER_OP("", "Range", 11, 1000, range_rule, kRuleReadsInput(0) | kRuleReadsInput(1) | kRuleReadsInput(2));
ORT_REGISTER_OP("", "Identity", 1, 1000, same_as_input0, kViewOp | kSixteenBitInput(0));

}  // namespace ort_train
