// Gradient rule of CenterCropPad: it only moves elements (and adds zeros),
// so dX is CenterCropPad of dY back to X's dims, about the same centre.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("CenterCropPad").no_gradient_for({1}).rule([](GradientContext& c) -> Status {
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  ASSIGN_OR_RETURN(auto g, c.add1("CenterCropPad", {c.GO(0), shape}));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
});

}  // namespace ort_train
