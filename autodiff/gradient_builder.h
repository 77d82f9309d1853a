// The autodiff driver: walks the graph backwards from a scalar loss and appends
// the gradient of the loss with respect to each trainable initializer, as
// ordinary nodes of the same model (see gradient_rule.h for what rules do and
// what the driver does for them).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/graph_builder.h"

namespace ort_train {

struct GradientGraph {
  std::string loss;                              // the scalar the gradients are of
  std::vector<std::string> trainable;            // values that got a gradient, in the order asked
  std::map<std::string, std::string> gradient;   // initializer -> its gradient's value name (a graph output)
  // Trainable initializers with no differentiable path to the loss: they get no
  // gradient (as a PyTorch parameter whose .grad stays None) and are reported.
  std::vector<std::string> unreached;
};

// Every node on a path from a trainable initializer to the loss whose op has no
// gradient rule, one line each ("name (Op)"); empty when all have rules.
std::vector<std::string> nodes_without_gradient(const Model& model, const std::string& loss,
                                                const std::vector<std::string>& trainable);

// Appends the backward graph to `b`'s model. `trainable` names floating-point
// initializers (or graph inputs, for gradient checks). The gradient of w is
// the graph output "<w>_grad" (made unique if taken). The loss must be a
// floating-point value with one element. `seed`, when given, names a scalar
// of the loss's dtype the backward starts from instead of 1 (fp16's loss scale).
// `padding_rows` maps an embedding table to the row its lookups never train
// (the description's embeddings:, torch.nn.Embedding's padding_idx).
Result<GradientGraph> build_gradients(GraphBuilder& b, const std::string& loss,
                                      const std::vector<std::string>& trainable, const std::string& seed = "",
                                      const std::map<std::string, int64_t>& padding_rows = {});

}  // namespace ort_train
