// Shape rule of Resize (opsets 10-19; every mode and transform): the output size per dim from
// graph/ops/resize_target.h (sizes, or floor(input size * scale); axes and
// keep_aspect_ratio_policy of opset 18). ResizeGrad (com.ort_train) has
// the shape given by its input 1's value. Kernels in runtime/cpu/kernels/resize.cc
// and resize_grad.cc; the sampling rules in runtime/cpu/resize_taps.h.
#include <algorithm>
#include <cmath>

#include "graph/op_schema.h"
#include "graph/ops/resize_target.h"

namespace ort_train {
namespace {

Status resize_rule(InferContext& ctx) {
  DType t = ctx.input_dtype(0);
  const OptShape& x = ctx.input_shape(0);
  std::string mode = ctx.node().attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return invalid_argument("{}: unknown mode '{}' (nearest, linear, cubic)", ctx.node().describe(), mode);
  const std::string coord = ctx.node().attr_string("coordinate_transformation_mode", "half_pixel");
  static const char* kCoords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                  "asymmetric", "tf_crop_and_resize"};
  if (ctx.opset() >= 11 && std::find(std::begin(kCoords), std::end(kCoords), coord) == std::end(kCoords))
    return invalid_argument("{}: unknown coordinate_transformation_mode '{}'", ctx.node().describe(), coord);
  if (!x) {
    ctx.set_output(0, t, std::nullopt);
    return Status::Ok();
  }
  size_t scales_at = ctx.opset() >= 11 ? 2 : 1;
  const Tensor* sizes = ctx.opset() >= 11 && ctx.has_input(3) ? ctx.input_value(3) : nullptr;
  const Tensor* scales = ctx.has_input(scales_at) ? ctx.input_value(scales_at) : nullptr;
  if (!(sizes && sizes->numel() > 0) && !(scales && scales->numel() > 0)) {  // known only at run time
    ctx.set_output(0, t, Shape(x->size()));
    return Status::Ok();
  }
  std::vector<int64_t> in;
  for (const Dim& d : *x) in.push_back(d.known() ? d.value : -1);
  ASSIGN_OR_RETURN(ResizeTarget target, resize_target(ctx.node(), in, scales, sizes));
  Shape out(x->size());
  for (size_t d = 0; d < x->size(); ++d) out[d] = target.sizes[d] >= 0 ? Dim(target.sizes[d]) : (*x)[d];
  for (size_t d = 0; d < x->size(); ++d)  // a dim resized from an unknown size is unknown
    if (target.sizes[d] < 0 && target.scales[d] != 1.0) out[d] = Dim();
  bool empty_out = false;
  for (const Dim& d : out) empty_out = empty_out || (d.known() && d.value == 0);
  for (size_t d = 0; d < x->size() && !empty_out; ++d)
    if ((*x)[d].known() && (*x)[d].value == 0 && out[d].known() && out[d].value > 0)
      return shape_error("{}: dim {} of the input is empty, so the output's must be too", ctx.node().describe(), d);
  ctx.set_output(0, t, out);
  return Status::Ok();
}

Status resize_grad_rule(InferContext& ctx) { return shape_from_value(ctx, 0, 1); }

}  // namespace

ORT_REGISTER_OP("", "Resize", 10, 1000, resize_rule, kRuleReadsInput(1) | kRuleReadsInput(2) | kRuleReadsInput(3));
ORT_REGISTER_OP(kOrtTrainDomain, "ResizeGrad", 1, 1000, resize_grad_rule, kRuleReadsInput(1));

}  // namespace ort_train
