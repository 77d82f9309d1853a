// Gradient rule of AffineGrid: the grid is linear in theta, so dTheta is
// each point's dGrid times its normalized coordinates, summed over the
// points (com.ort_train AffineGridGrad). `size` gets none.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("AffineGrid").no_gradient_for({1}).rule([](GradientContext& c) -> Status {
  std::vector<Attribute> attrs;
  if (const Attribute* a = c.node().attr("align_corners")) attrs.push_back(*a);
  ASSIGN_OR_RETURN(auto g, c.add1("AffineGridGrad", {c.GO(0), c.I(1)}, attrs, kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
});

}  // namespace ort_train
