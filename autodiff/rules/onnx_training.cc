// ONNX's training operators are optimizer updates and gradient requests, not
// functions to differentiate through (ONNX's spec gives them no gradient).
#include "autodiff/gradient_rule.h"

namespace ort_train {

ORT_GRADIENT_IN_DOMAIN("ai.onnx.preview.training", "Adagrad").not_differentiable();
ORT_GRADIENT_IN_DOMAIN("ai.onnx.preview.training", "Adam").not_differentiable();
ORT_GRADIENT_IN_DOMAIN("ai.onnx.preview.training", "Momentum").not_differentiable();
ORT_GRADIENT_IN_DOMAIN("ai.onnx.preview.training", "Gradient").not_differentiable();

}  // namespace ort_train
