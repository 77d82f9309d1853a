// Shape rule of Compress(input, condition): the slices along `axis` (or the
// elements of the flattened input, without one) where the condition is true;
// the condition may be shorter, the rest counts as false. The count depends
// on the data: known when the condition's value is (at run time or for a
// constant), else a dim of its own, as NonZero's.
#include "graph/ops/compress.h"

#include "graph/op_schema.h"

namespace ort_train {

Result<CompressView> compress_view(const Node& node, const Dims& x, const Tensor& condition) {
  CompressView v;
  v.n = 1;
  for (int64_t d : x) v.n *= d;
  if (const Attribute* a = node.attr("axis")) {
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a->i, static_cast<int64_t>(x.size()), node));
    v.n = x[static_cast<size_t>(axis)];
    for (int64_t d = 0; d < axis; ++d) v.outer *= x[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < x.size(); ++d) v.inner *= x[d];
  }
  const std::vector<int64_t> c = condition.to_int64_vector();
  if (static_cast<int64_t>(c.size()) > v.n)
    return shape_error("{}: the condition has {} entries for {}", node.describe(), c.size(), v.n);
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i]) v.keep.push_back(static_cast<int64_t>(i));
  return v;
}
namespace {

Status compress_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  const Tensor* cond = ctx.input_value(1);
  Dim kept;
  if (cond) {
    int64_t n = 0;
    for (int64_t v : cond->to_int64_vector()) n += v != 0;
    kept = Dim(n);
  }
  const Attribute* axis = ctx.node().attr("axis");
  if (!axis) {
    ctx.set_output(0, ctx.input_dtype(0), Shape{kept});
    return Status::Ok();
  }
  if (!x) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(int64_t a, normalize_axis(axis->i, static_cast<int64_t>(x->size()), ctx.node()));
  Shape out = *x;
  if (cond && out[static_cast<size_t>(a)].known() && cond->numel() > out[static_cast<size_t>(a)].value)
    return shape_error("{}: the condition is longer than the axis", ctx.node().describe());
  out[static_cast<size_t>(a)] = kept;
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Compress", 9, 1000, compress_rule, kRuleReadsInput(1));

}  // namespace ort_train
