#include "graph/passes/op_traits.h"

#include "graph/op_schema.h"

namespace ort_train {

namespace {

uint32_t traits_of(const Node& node) { return OpRegistry::instance().traits(node.domain, node.op_type); }

}  // namespace

bool is_random_op(const Node& node) { return (traits_of(node) & kRandomOp) != 0; }

bool is_training_step_op(const Node& node) {
  if ((traits_of(node) & kTrainingStateOp) == 0) return false;
  // ONNX's training ops always; a standard op (BatchNormalization) only with training_mode set.
  return !node.domain.empty() || node.attr_int("training_mode", 0) != 0;
}

std::vector<std::pair<size_t, size_t>> state_outputs(const Node& node) {
  return OpRegistry::instance().state_outputs(node.domain, node.op_type);
}

bool reads_run_options(const Node& node) { return (traits_of(node) & kReadsRunOptions) != 0; }

bool is_view_op(const Node& node) { return (traits_of(node) & kViewOp) != 0; }

bool has_subgraph(const Node& node) {
  for (const Attribute& a : node.attributes)
    if (a.type == Attribute::Type::kGraph || a.type == Attribute::Type::kGraphs) return true;
  return false;
}

// An op nobody registered is neither folded nor merged: nothing here runs it,
// it may be random for all anyone knows, and each such node must reach the
// error that lists the unsupported nodes by name.
bool is_known_op(const Node& node) { return OpRegistry::instance().knows(node.domain, node.op_type); }

bool is_mergeable_op(const Node& node) {
  return is_known_op(node) && !is_random_op(node) && !is_training_step_op(node) && !has_subgraph(node);
}

bool is_foldable_op(const Node& node) {
  return is_mergeable_op(node) && !reads_run_options(node);
}

}  // namespace ort_train
