// Shape rule of Compress(input, condition): the slices along `axis` (or the
// elements of the flattened input, without one) where the condition is true;
// the condition may be shorter, the rest counts as false. The count depends
// on the data: known when the condition's value is (at run time or for a
// constant), else a dim of its own, as NonZero's.
#include "graph/op_schema.h"

namespace ort_train {
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

ORT_REGISTER_OP("", "Compress", 9, 1000, compress_rule, kPlainOp);

}  // namespace ort_train
