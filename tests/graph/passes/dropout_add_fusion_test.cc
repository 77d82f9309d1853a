// dropout_add_fusion on the residual Dropout: Dropout(x) + r, in both operand
// orders, becomes one DropoutAdd with the Dropout's mask output, computing the
// same values in training (a mask seeded alike) and inference; a Dropout read
// elsewhere, or a mask read before the Add, is left alone.
#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

struct Residual {
  bool dropout_first = true;
  bool dropped_is_output = false;
};

// y = Dropout(x, 0.25, training) + r over [3, 8], mask m an output.
Model residual(const Residual& s) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {3, 8});
  add_input(g, "r", DType::kFloat, {3, 8});
  add_initializer(g, "ratio", make<float>({}, {0.25f}));
  add_initializer(g, "training", make<bool>({}, {true}));
  g.nodes.push_back(node("out/dropout/Dropout", "Dropout", {"x", "ratio", "training"}, {"d", "m"}));
  g.nodes.push_back(node("out/Add", "Add", s.dropout_first ? std::vector<std::string>{"d", "r"}
                                                           : std::vector<std::string>{"r", "d"},
                         {"y"}));
  add_output(g, "y");
  add_output(g, "m");
  if (s.dropped_is_output) add_output(g, "d");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

std::map<std::string, Tensor> feeds() {
  return {{"x", random_tensor({3, 8}, 31, -2.f, 2.f)}, {"r", random_tensor({3, 8}, 32, -2.f, 2.f)}};
}

}  // namespace

TEST_CASE("dropout_add_fusion: Dropout(x) + r becomes one DropoutAdd keeping the mask", "[passes][fusion]") {
  for (bool first : {true, false}) {
    INFO("dropout first: " << first);
    Model m = residual({.dropout_first = first});
    RunOptions training;
    training.training = true;
    training.seed = 5;
    auto before = run_model(m, feeds(), training);
    int64_t changed = 0;
    REQUIRE(apply_pass("dropout_add_fusion", m, {}, &changed));
    CHECK(changed == 1);
    REQUIRE(m.graph.nodes.size() == 1);
    const Node& n = m.graph.nodes[0];
    CHECK(n.op_type == "DropoutAdd");
    CHECK(n.domain == kOrtTrainDomain);
    CHECK(n.inputs == std::vector<std::string>{"x", "r", "ratio", "training"});
    CHECK(n.outputs == std::vector<std::string>{"y", "m"});
    // The node's place seeds the mask: a one-node graph's Dropout was node 0 too.
    auto after = run_model(m, feeds(), training);
    require_close(after.at("y"), before.at("y"), 0, 0);
    require_close(after.at("m"), before.at("m"), 0, 0);
  }
}

TEST_CASE("dropout_add_fusion: a dropped tensor needed elsewhere stays", "[passes][fusion]") {
  Model needed = residual({.dropped_is_output = true});
  REQUIRE_FALSE(apply_pass("dropout_add_fusion", needed));
}
