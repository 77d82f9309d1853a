// The parameterised activations and the trigonometric/hyperbolic functions
// (numerics/activations.h): which Activation an op is, and its attributes with
// ONNX's defaults. Kernels and the gradient op ActivationGrad read them here.
#pragma once
#include <string_view>

#include "graph/graph.h"
#include "numerics/activations.h"

namespace ort_train {

struct ActivationCall {
  Activation op;
  ActivationParams params;
};

// The activation named `op_type` (HardSigmoid, HardSwish, Elu, Selu, Celu,
// ThresholdedRelu, Shrink, Softsign, Mish, Tan, Sinh, Cosh, Asin, Acos, Asinh,
// Acosh, Atanh) with `node`'s attributes. The forward passes its own op type;
// ActivationGrad passes its `activation` attribute.
Result<ActivationCall> activation_call(const Node& node, std::string_view op_type);

// ActivationGrad's: the forward op type its `activation` attribute names.
Result<ActivationCall> activation_grad_call(const Node& grad_node);

}  // namespace ort_train
