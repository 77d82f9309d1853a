// The loss the trainer appends to a model whose output is not already a scalar
// loss (model description `loss: {type: ...}`), built from standard ONNX ops so
// the gradient rules of those ops differentiate it like any other part.
#pragma once
#include <cstdint>
#include <string>

#include "configs/loss_spec.h"
#include "graph/graph_builder.h"

namespace ort_train {

// Appends the loss nodes (labels must already be graph inputs) and returns the
// name of the scalar loss value; for `output`, checks it and returns it.
Result<std::string> append_loss(GraphBuilder& b, const LossSpec& spec);

}  // namespace ort_train
