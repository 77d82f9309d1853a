// Gradient rules of the view ops: the gradient is dY viewed in the input's shape.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Status view_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto g, c.builder().reshape_like(c.GO(0), c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Reshape").no_gradient_for({1}).rule(view_rule);
ORT_GRADIENT("Flatten").rule(view_rule);
ORT_GRADIENT("Squeeze").no_gradient_for({1}).rule(view_rule);
ORT_GRADIENT("Unsqueeze").no_gradient_for({1}).rule(view_rule);

}  // namespace ort_train
