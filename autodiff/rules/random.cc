// The random ops' outputs do not depend on their inputs' values (the *Like
// forms read only the shape; Bernoulli's sample is piecewise constant in the
// probabilities, as torch.bernoulli's gradient is zero): no gradient flows.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("RandomUniform").not_differentiable();
ORT_GRADIENT("RandomNormal").not_differentiable();
ORT_GRADIENT("RandomUniformLike").not_differentiable();
ORT_GRADIENT("RandomNormalLike").not_differentiable();
ORT_GRADIENT("Bernoulli").not_differentiable();

}  // namespace ort_train
