// Gradient rule of GridSample: com.ort_train GridSampleGrad gives dX (each
// point's dY spread over the input positions it read, by their weights) and
// dGrid (dY times the slope of the interpolation; zero for nearest).
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Status grid_sample_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto g, c.add("GridSampleGrad", {c.GO(0), c.I(0), c.I(1)}, 2, c.node().attributes,
                                 kOrtTrainDomain));
  if (c.needs_GI(0)) c.set_GI(0, g[0]);
  if (c.needs_GI(1)) c.set_GI(1, g[1]);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("GridSample").rule(grid_sample_rule);

}  // namespace ort_train
