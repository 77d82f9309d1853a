// Gradient rule of Resize: ResizeGrad adds each output's gradient back to the
// input positions it was sampled from (roi, scales and sizes get no gradient;
// tf_crop_and_resize passes roi on, and its extrapolated elements add nothing).
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("Resize").no_gradient_for({1, 2, 3}).rule([](GradientContext& c) -> Status {
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  std::vector<std::string> in{c.GO(0), shape};
  size_t scales_at = c.opset() >= 11 ? 2 : 1;
  const bool sizes = c.opset() >= 11 && c.num_inputs() > 3 && c.has_input(3);
  const bool scales = c.num_inputs() > scales_at && c.has_input(scales_at);
  if (scales || sizes) in.push_back(scales ? c.I(scales_at) : "");
  if (sizes) in.push_back(c.I(3));  // keep_aspect_ratio_policy's common scale is computed from them
  if (c.opset() >= 11 && c.has_input(1) &&
      c.node().attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
    in.resize(4);  // "" for scales or sizes left out
    in.push_back(c.I(1));
  }
  std::vector<Attribute> attrs = c.node().attributes;
  attrs.push_back(Attribute::make_int("forward_opset", c.opset()));
  ASSIGN_OR_RETURN(auto g, c.add1("ResizeGrad", in, attrs, kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
});

}  // namespace ort_train
