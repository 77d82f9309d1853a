// Shape rule of CenterCropPad(input, shape) with `axes` (graph/ops/center_crop_pad.h).
#include "graph/ops/center_crop_pad.h"

#include <algorithm>

#include "graph/op_schema.h"

namespace ort_train {

Result<Dims> center_crop_pad_dims(const Node& node, const Dims& in, const Dims& shape) {
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = node.attr_ints("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  if (shape.size() != axes.size())
    return shape_error("{}: shape has {} values for {} axes", node.describe(), shape.size(), axes.size());
  Dims out = in;
  std::vector<bool> seen(in.size(), false);
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = axes[k];
    if (a < -rank || a >= rank) return shape_error("{}: axis {} is outside rank {}", node.describe(), a, rank);
    const auto d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (seen[d]) return shape_error("{}: axis {} is named twice", node.describe(), a);
    seen[d] = true;
    if (shape[k] < 0) return shape_error("{}: shape {} has a negative size", node.describe(), dims_to_string(shape));
    out[d] = shape[k];
  }
  return out;
}

namespace {

Status center_crop_pad_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  const Tensor* shape = ctx.input_value(1);
  if (!x || !shape) {
    ctx.set_output(0, ctx.input_dtype(0), x ? OptShape(Shape(x->size())) : std::nullopt);
    return Status::Ok();
  }
  if (shape->dtype() != DType::kInt64 && shape->dtype() != DType::kInt32)
    return shape_error("{}: shape must be int64 or int32", ctx.node().describe());
  Dims in;  // -1 where unknown: a dim the axes leave alone stays as it is
  for (const Dim& d : *x) in.push_back(d.known() ? d.value : -1);
  ASSIGN_OR_RETURN(Dims out, center_crop_pad_dims(ctx.node(), in, shape->to_int64_vector()));
  Shape s = *x;
  for (size_t d = 0; d < s.size(); ++d)
    if (out[d] >= 0) s[d] = Dim(out[d]);
  ctx.set_output(0, ctx.input_dtype(0), s);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "CenterCropPad", 18, 1000, center_crop_pad_rule, kRuleReadsInput(1));

}  // namespace ort_train
