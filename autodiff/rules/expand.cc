// Gradient rule of Expand: dY summed back to the input's shape, which is the
// driver's job for every broadcast gradient.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("Expand").no_gradient_for({1}).rule([](GradientContext& c) -> Status {
  c.set_GI(0, c.GO(0));
  return Status::Ok();
});

}  // namespace ort_train
