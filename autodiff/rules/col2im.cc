// Gradient rule of Col2Im: it only sums column elements into pixels, so each
// column element's gradient is its pixel's (zero in the padding):
// com.ort_train Im2Col of dY with the same block, strides, dilations and pads.
// image_shape and block_shape get none.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("Col2Im").no_gradient_for({1, 2}).rule([](GradientContext& c) -> Status {
  std::vector<Attribute> attrs;
  for (const char* name : {"dilations", "pads", "strides"})
    if (const Attribute* a = c.node().attr(name)) attrs.push_back(*a);
  ASSIGN_OR_RETURN(auto g, c.add1("Im2Col", {c.GO(0), c.I(2)}, attrs, kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
});

}  // namespace ort_train
