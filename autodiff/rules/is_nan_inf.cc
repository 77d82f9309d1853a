// IsNaN and IsInf give booleans: no gradient flows through them.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("IsNaN").not_differentiable();
ORT_GRADIENT("IsInf").not_differentiable();

}  // namespace ort_train
