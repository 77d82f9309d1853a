// LpNormalization's and MeanVarianceNormalization's gradients: one
// com.ort_train op each, (dY, X) -> dX, with the forward's attributes.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

std::function<Status(GradientContext&)> normalize_rule(const char* grad_op) {
  return [grad_op](GradientContext& c) -> Status {
    ASSIGN_OR_RETURN(auto g, c.add1(grad_op, {c.GO(0), c.I(0)}, c.node().attributes, kOrtTrainDomain));
    c.set_GI(0, g);
    return Status::Ok();
  };
}

}  // namespace

ORT_GRADIENT("LpNormalization").rule(normalize_rule("LpNormalizationGrad"));
ORT_GRADIENT("MeanVarianceNormalization").rule(normalize_rule("MeanVarianceNormalizationGrad"));

}  // namespace ort_train
