// ONNX's Gradient operator (ai.onnx.preview.training v1): outputs d y / d x for
// each x in the attribute `xs`, y (attribute `y`) summed to a scalar when it
// is not one. Rather than a kernel, each Gradient node is replaced by the
// backward graph the autodiff builder makes for it, so its gradients come from
// the same rules as training's.
#pragma once
#include "graph/graph.h"

namespace ort_train {

// Replaces every Gradient node of `model` (a no-op when there is none).
Status expand_gradient_ops(Model& model);

}  // namespace ort_train
