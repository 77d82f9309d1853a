// The bitwise ops compute on integers only: no gradient flows through them.
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT("BitwiseAnd").not_differentiable();
ORT_GRADIENT("BitwiseOr").not_differentiable();
ORT_GRADIENT("BitwiseXor").not_differentiable();
ORT_GRADIENT("BitwiseNot").not_differentiable();
ORT_GRADIENT("BitShift").not_differentiable();

}  // namespace ort_train
