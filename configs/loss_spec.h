// What loss a model description asks for (`loss:`): the model's own scalar
// output, or a loss the trainer appends (autodiff/loss.h builds it). Plain
// data, so the description parser need not know how losses are built.
#pragma once
#include <cstdint>
#include <string>

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

}  // namespace ort_train
