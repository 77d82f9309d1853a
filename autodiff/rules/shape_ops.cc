// Ops whose outputs do not depend differentiably on their inputs' values: a
// shape, a size, an index range, or a value fixed by attributes.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("Shape").not_differentiable();
ORT_GRADIENT("Size").not_differentiable();
ORT_GRADIENT("ConstantOfShape").not_differentiable();
ORT_GRADIENT("Constant").not_differentiable();
ORT_GRADIENT("Range").not_differentiable();
ORT_GRADIENT("NonZero").not_differentiable();  // coordinates, not values

}  // namespace ort_train
