// InstanceNormalization's and GroupNormalization's gradient: one com.ort_train
// GroupNormGrad(dY, X, scale) -> (dX, dscale, dbias), which recomputes each
// row's mean and variance from X rather than keeping them from the forward.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Status group_norm_rule(GradientContext& c) {
  const bool instance = c.node().op_type == "InstanceNormalization";
  std::vector<Attribute> attrs = {
      Attribute::make_float("epsilon", c.node().attr_float("epsilon", 1e-5f)),
      Attribute::make_int("num_groups", instance ? 0 : c.node().attr_int("num_groups", 0)),
      Attribute::make_int("affine_per_group", !instance && c.opset() < 21 ? 1 : 0)};
  ASSIGN_OR_RETURN(auto g, c.add("GroupNormGrad", {c.GO(0), c.I(0), c.I(1)}, 3, attrs, kOrtTrainDomain));
  for (size_t i = 0; i < 3; ++i)
    if (c.needs_GI(i)) c.set_GI(i, g[i]);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("InstanceNormalization").rule(group_norm_rule);
ORT_GRADIENT("GroupNormalization").rule(group_norm_rule);

}  // namespace ort_train
