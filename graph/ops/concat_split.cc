// Shape rules: Concat and Split.
#include "graph/op_schema.h"

namespace ort_train {

// Sizes of Split's outputs along the axis: from the `split` input (opset 13+) or
// attribute, else equal parts (the last one smaller when the size does not divide).
Result<std::vector<int64_t>> split_sizes(const Node& node, int64_t opset, const Tensor* split_input, int64_t dim,
                                         size_t num_outputs) {
  std::vector<int64_t> sizes;
  if (opset >= 13) {
    if (split_input) sizes = split_input->to_int64_vector();
  } else {
    sizes = node.attr_ints("split");
  }
  if (!sizes.empty()) {
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) return shape_error("{}: negative split size {}", node.describe(), s);
      total += s;
    }
    if (sizes.size() != num_outputs || total != dim)
      return shape_error("{}: split sizes sum to {} over {} parts, but the axis has {} and the node {} outputs",
                         node.describe(), total, sizes.size(), dim, num_outputs);
    return sizes;
  }
  int64_t n = static_cast<int64_t>(num_outputs);
  if (opset >= 18 && node.attr("num_outputs") && node.attr_int("num_outputs", n) != n)
    return shape_error("{}: num_outputs is {} but the node has {} outputs", node.describe(),
                       node.attr_int("num_outputs", n), n);
  if (n == 0) return shape_error("{}: Split needs at least one output", node.describe());
  if (opset < 18 && dim % n != 0)
    return shape_error("{}: axis of size {} does not split evenly into {} outputs", node.describe(), dim, n);
  // Opset 18: equal chunks of ceil(dim / n), the last one smaller.
  int64_t chunk = (dim + n - 1) / n;
  sizes.assign(static_cast<size_t>(n), chunk);
  sizes.back() = dim - chunk * (n - 1);
  if (sizes.back() < 0)
    return shape_error("{}: axis of size {} cannot split into {} chunks of {}", node.describe(), dim, n, chunk);
  return sizes;
}

namespace {

Status concat_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const OptShape* first = nullptr;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.input_shape(i)) first = &ctx.input_shape(i);
  if (!first) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>((*first)->size());
  if (rank == 0) return shape_error("{}: scalars cannot be concatenated", ctx.node().describe());
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", 0), rank, ctx.node()));
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.input_dtype(i) != DType::kUndefined && dt != DType::kUndefined && ctx.input_dtype(i) != dt)
      return shape_error("{}: input {} is {} but input 0 is {}", ctx.node().describe(), i,
                         dtype_name(ctx.input_dtype(i)), dtype_name(dt));
  Shape out = **first;
  int64_t total = 0;
  bool known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const OptShape& s = ctx.input_shape(i);
    if (!s) {
      known = false;
      continue;
    }
    if (static_cast<int64_t>(s->size()) != rank)
      return shape_error("{}: input {} has rank {} but input 0 has rank {}", ctx.node().describe(), i, s->size(), rank);
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) continue;
      if ((*s)[d].known() && out[d].known() && (*s)[d].value != out[d].value)
        return shape_error("{}: input {} has size {} at axis {}, expected {}", ctx.node().describe(), i,
                           (*s)[d].value, d, out[d].value);
      if (!out[d].known() && (*s)[d].known()) out[d] = (*s)[d];
    }
    if ((*s)[axis].known()) total += (*s)[axis].value;
    else known = false;
  }
  out[axis] = known ? Dim(total) : Dim();
  ctx.set_output(0, dt, std::move(out));
  return Status::Ok();
}

Status split_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const OptShape& in = ctx.input_shape(0);
  size_t n = ctx.num_outputs();
  if (!in) {
    for (size_t i = 0; i < n; ++i) ctx.set_output(i, dt, std::nullopt);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  if (rank == 0) return shape_error("{}: a scalar cannot be split", ctx.node().describe());
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", 0), rank, ctx.node()));
  bool split_unknown = ctx.opset() >= 13 && ctx.has_input(1) && !ctx.input_value(1);
  if (!(*in)[axis].known() || split_unknown) {
    for (size_t i = 0; i < n; ++i) {
      Shape s = *in;
      s[axis] = Dim();
      ctx.set_output(i, dt, s);
    }
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(auto sizes, split_sizes(ctx.node(), ctx.opset(), ctx.input_value(1), (*in)[axis].value, n));
  for (size_t i = 0; i < n; ++i) {
    Shape s = *in;
    s[axis] = Dim(sizes[i]);
    ctx.set_output(i, dt, s);
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Concat", 4, 1000, concat_rule, kPlainOp);
ORT_REGISTER_OP("", "Split", 2, 1000, split_rule, kRuleReadsInput(1));

}  // namespace ort_train
