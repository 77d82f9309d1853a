// ArgMax and ArgMin give indices: no gradient flows through them.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("ArgMax").not_differentiable();
ORT_GRADIENT("ArgMin").not_differentiable();

}  // namespace ort_train
