// Op traits (graph/op_schema.h's OpTrait, read by graph/passes/op_traits.h):
// every registered op states them where it registers, and what the passes,
// the memory planner and the executor read of them.
#include "graph/op_schema.h"
#include "graph/passes/op_traits.h"
#include "test_util.h"

using namespace ort_train;

namespace {

Node node(const std::string& domain, const std::string& op, std::vector<Attribute> attrs = {}) {
  Node n;
  n.domain = domain;
  n.op_type = op;
  n.attributes = std::move(attrs);
  return n;
}

}  // namespace

TEST_CASE("Every registered op states its traits where it registers", "[op_traits]") {
  size_t ops = 0;
  for (const OpSchema* s : OpRegistry::instance().all()) {
    INFO((s->domain.empty() ? "ai.onnx" : s->domain) << " " << s->op_type);
    CHECK((s->traits & kTraitsUndeclared) == 0);
    ++ops;
  }
  CHECK(ops > 100);
}

TEST_CASE("Op traits: views, random ops, ops that read the run, the training step's ops", "[op_traits]") {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) {
    INFO(op);
    CHECK(is_view_op(node("", op)));
    CHECK(is_foldable_op(node("", op)));
  }
  CHECK_FALSE(is_view_op(node("", "Transpose")));
  // DropoutAdd (dropout_add_fusion's) draws its own mask like Dropout: never merged or folded.
  for (auto [domain, op] : {std::pair{"", "Dropout"}, std::pair{kOrtTrainDomain, "DropoutAdd"}}) {
    INFO(op);
    CHECK(is_random_op(node(domain, op)));
    CHECK_FALSE(is_mergeable_op(node(domain, op)));
    CHECK_FALSE(is_foldable_op(node(domain, op)));
  }
  // Attention's dropout reads the step: not folded; two equal nodes (one seed attribute) may merge.
  for (const char* op : {"Attention", "AttentionGrad", "DropoutGrad"}) {
    INFO(op);
    CHECK(reads_run_options(node(kOrtTrainDomain, op)));
    CHECK_FALSE(is_foldable_op(node(kOrtTrainDomain, op)));
    CHECK(is_mergeable_op(node(kOrtTrainDomain, op)));
  }
  CHECK(is_training_step_op(node("", "BatchNormalization", {Attribute::make_int("training_mode", 1)})));
  CHECK_FALSE(is_training_step_op(node("", "BatchNormalization", {Attribute::make_int("training_mode", 0)})));
  CHECK_FALSE(is_training_step_op(node("", "BatchNormalization")));
  CHECK(is_training_step_op(node("ai.onnx.preview.training", "Adam")));
  for (const char* op : {"Add", "MatMul", "Softmax", "LayerNormalization"}) {
    INFO(op);
    CHECK(is_foldable_op(node("", op)));
    CHECK(is_mergeable_op(node("", op)));
    CHECK_FALSE(is_view_op(node("", op)));
  }
  // An op nobody registered has no traits, and is neither folded nor merged.
  CHECK(OpRegistry::instance().traits("example.custom", "Dropout") == 0);
  CHECK_FALSE(is_foldable_op(node("example.custom", "Dropout")));
  CHECK_FALSE(is_mergeable_op(node("", "RandomNormal")));
}

TEST_CASE("State outputs: BatchNormalization's running statistics, declared where it registers", "[op_traits]") {
  using Pairs = std::vector<std::pair<size_t, size_t>>;
  CHECK(state_outputs(node("", "BatchNormalization")) == Pairs{{1, 3}, {2, 4}});
  CHECK(state_outputs(node("", "LayerNormalization")).empty());
  CHECK(state_outputs(node("example.custom", "BatchNormalization")).empty());
  // An op whose outputs update its inputs is part of the training step, never folded or merged.
  for (const OpSchema* s : OpRegistry::instance().all()) {
    if (s->state_outputs.empty()) continue;
    INFO(s->op_type);
    CHECK((s->traits & kTrainingStateOp) != 0);
  }
}
