#include "graph/passes/op_traits.h"

#include <set>
#include <string>

namespace ort_train {

bool is_random_op(const Node& node) {
  // Matched by op type in any domain: a custom-domain op with one of these
  // names is random too, and a false positive only costs an optimization.
  static const std::set<std::string> kRandom = {"Dropout",           "RandomNormal", "RandomUniform",
                                                "RandomNormalLike",  "RandomUniformLike", "Multinomial",
                                                "Bernoulli"};
  return kRandom.count(node.op_type) > 0;
}

bool is_training_step_op(const Node& node) {
  if (node.domain == "ai.onnx.preview.training") return true;
  return node.domain.empty() && node.op_type == "BatchNormalization" && node.attr_int("training_mode", 0) != 0;
}

bool reads_run_options(const Node& node) { return node.op_type == "Dropout" || node.op_type == "DropoutGrad"; }

bool has_subgraph(const Node& node) {
  for (const Attribute& a : node.attributes)
    if (a.type == Attribute::Type::kGraph || a.type == Attribute::Type::kGraphs) return true;
  return false;
}

bool is_foldable_op(const Node& node) {
  return !is_random_op(node) && !is_training_step_op(node) && !reads_run_options(node) && !has_subgraph(node);
}

bool is_mergeable_op(const Node& node) {
  return !is_random_op(node) && !is_training_step_op(node) && !has_subgraph(node);
}

}  // namespace ort_train
