// The loss the trainer appends to a model whose output is not already a scalar
// loss (model description `loss: {type: ...}`), built from standard ONNX ops so
// the gradient rules of those ops differentiate it like any other part.
#pragma once
#include <cstdint>
#include <string>

#include "autodiff/graph_builder.h"

namespace ort_train {

struct LossSpec {
  // "softmax_cross_entropy" | "nll" | "mse" | "l1" | "bce_with_logits"; empty when
  // `output` names the model's own scalar loss.
  std::string type;
  std::string output;     // the model's own loss output (when type is empty)
  std::string input;      // model output the loss reads (logits, prediction)
  std::string target;     // label tensor
  std::string reduction = "mean";  // mean | sum
  int64_t ignore_index = -100;     // softmax_cross_entropy / nll, as PyTorch's default
};

// The loss kinds `type` accepts, for messages.
const char* loss_types();

// Appends the loss nodes (labels must already be graph inputs) and returns the
// name of the scalar loss value; for `output`, checks it and returns it.
Result<std::string> append_loss(GraphBuilder& b, const LossSpec& spec);

}  // namespace ort_train
