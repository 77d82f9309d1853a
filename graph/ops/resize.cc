// Shape rule of Resize (opsets 10-19): the output size per dim is `sizes`
// when given, else floor(input size * scale). ResizeGrad (com.ort_train) has
// the shape given by its input 1's value. Kernels in runtime/cpu/kernels/resize.cc
// and resize_grad.cc; the sampling rules in runtime/cpu/resize_taps.h.
#include <cmath>

#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status resize_rule(InferContext& ctx) {
  DType t = ctx.input_dtype(0);
  const OptShape& x = ctx.input_shape(0);
  if (!ctx.node().attr_ints("axes").empty())
    return unsupported("{}: the axes attribute is not supported", ctx.node().describe());
  if (ctx.attr_int("antialias", 0) != 0) return unsupported("{}: antialias is not supported", ctx.node().describe());
  std::string mode = ctx.node().attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear")
    return unsupported("{}: mode '{}' is not supported (nearest, linear are)", ctx.node().describe(), mode);
  if (ctx.node().attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
    return unsupported("{}: tf_crop_and_resize is not supported", ctx.node().describe());
  if (!x) {
    ctx.set_output(0, t, std::nullopt);
    return Status::Ok();
  }
  size_t scales_at = ctx.opset() >= 11 ? 2 : 1;
  const Tensor* sizes = ctx.opset() >= 11 && ctx.has_input(3) ? ctx.input_value(3) : nullptr;
  const Tensor* scales = ctx.has_input(scales_at) ? ctx.input_value(scales_at) : nullptr;
  Shape out(x->size());
  if (sizes && sizes->numel() > 0) {
    std::vector<int64_t> s = sizes->to_int64_vector();
    if (s.size() != x->size()) return shape_error("{}: {} sizes for rank {}", ctx.node().describe(), s.size(), x->size());
    for (size_t d = 0; d < s.size(); ++d) out[d] = Dim(s[d]);
  } else if (scales && scales->numel() > 0) {
    if (static_cast<size_t>(scales->numel()) != x->size())
      return shape_error("{}: {} scales for rank {}", ctx.node().describe(), scales->numel(), x->size());
    for (size_t d = 0; d < x->size(); ++d) {
      double sc = scales->dtype() == DType::kDouble ? scales->data<double>()[d] : scales->data<float>()[d];
      if (!(*x)[d].known()) continue;
      double size = std::floor(static_cast<double>((*x)[d].value) * sc);
      // Checked before the conversion: a double past int64's range converts to nothing defined.
      if (!(size >= 0 && size < 9.2e18))
        return shape_error("{}: scale {} on dim {} of size {} gives no valid output size", ctx.node().describe(), sc,
                           d, (*x)[d].value);
      out[d] = Dim(static_cast<int64_t>(size));
    }
  }
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
