// Gradient rules of LayerNormalization, its simplified form (RMSNorm) and
// BatchNormalization: one fused op each returning (dX, dScale[, dBias]).
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

// Sets the gradients the driver wants from a fused (dX, dScale, dBias) node.
Status set_from(GradientContext& c, const std::vector<std::string>& g, size_t bias_input) {
  if (c.needs_GI(0)) c.set_GI(0, g[0]);
  if (c.needs_GI(1)) c.set_GI(1, g[1]);
  if (c.num_inputs() > bias_input && c.needs_GI(bias_input)) c.set_GI(bias_input, g[2]);
  return Status::Ok();
}

Status layer_norm_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto mean, c.ensure_output(1));
  ASSIGN_OR_RETURN(auto inv_std, c.ensure_output(2));
  ASSIGN_OR_RETURN(auto g, c.add("LayerNormalizationGrad", {c.GO(0), c.I(0), c.I(1), mean, inv_std}, 3,
                                 {Attribute::make_int("axis", c.node().attr_int("axis", -1))}, kOrtTrainDomain));
  return set_from(c, g, 2);
}

Status rms_norm_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto inv_std, c.ensure_output(1));
  ASSIGN_OR_RETURN(auto g, c.add("SimplifiedLayerNormalizationGrad", {c.GO(0), c.I(0), c.I(1), inv_std}, 2,
                                 {Attribute::make_int("axis", c.node().attr_int("axis", -1))}, kOrtTrainDomain));
  return set_from(c, g, 2);
}

Status batch_norm_rule(GradientContext& c) {
  bool training = c.opset() >= 14 && c.node().attr_int("training_mode", 0) != 0;
  ASSIGN_OR_RETURN(auto g, c.add("BatchNormalizationGrad", {c.GO(0), c.I(0), c.I(1), c.I(3), c.I(4)}, 3,
                                 {Attribute::make_float("epsilon", c.node().attr_float("epsilon", 1e-5f)),
                                  Attribute::make_int("training_mode", training)},
                                 kOrtTrainDomain));
  return set_from(c, g, 2);
}

}  // namespace

ORT_GRADIENT("LayerNormalization").rule(layer_norm_rule);
ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "LayerNormalization").rule(layer_norm_rule);  // layer_norm_fusion's
ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "SimplifiedLayerNormalization").rule(rms_norm_rule);  // rms_norm_fusion's
// Running mean and variance are statistics, not parameters.
// The updated running statistics (outputs 1, 2) are bookkeeping, not functions to differentiate.
ORT_GRADIENT("BatchNormalization").no_gradient_for({3, 4}).no_gradient_from_outputs({1, 2}).rule(batch_norm_rule);

}  // namespace ort_train
