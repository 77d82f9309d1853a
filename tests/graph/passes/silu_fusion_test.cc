// silu_fusion on Llama's MLP activation, x * Sigmoid(x): both operand orders
// become one Silu computing the same values; a Sigmoid read elsewhere, or a
// product with another tensor, is left alone.
#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

Model silu(bool sigmoid_first, const std::string& other = "x", bool sigmoid_is_output = false) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {3, 5});
  add_input(g, "z", DType::kFloat, {3, 5});
  g.nodes.push_back(node("mlp/act_fn/Sigmoid", "Sigmoid", {"x"}, {"s"}));
  g.nodes.push_back(node("mlp/act_fn/Mul", "Mul", sigmoid_first ? std::vector<std::string>{"s", other}
                                                                : std::vector<std::string>{other, "s"},
                         {"y"}));
  add_output(g, "y");
  if (sigmoid_is_output) add_output(g, "s");
  return m;
}

std::map<std::string, Tensor> feeds() {
  return {{"x", random_tensor({3, 5}, 11, -30.f, 30.f)}, {"z", random_tensor({3, 5}, 12, -3.f, 3.f)}};
}

}  // namespace

TEST_CASE("silu_fusion: x * Sigmoid(x), in both orders, becomes Silu", "[passes][fusion]") {
  for (bool sigmoid_first : {false, true}) {
    INFO("sigmoid first: " << sigmoid_first);
    Model m = silu(sigmoid_first);
    auto before = run_model(m, feeds());
    int64_t changed = 0;
    REQUIRE(apply_pass("silu_fusion", m, {}, &changed));
    CHECK(changed == 1);
    REQUIRE(m.graph.nodes.size() == 1);
    const Node& n = m.graph.nodes[0];
    CHECK(n.op_type == "Silu");
    CHECK(n.domain == kOrtTrainDomain);
    CHECK(n.name == "mlp/act_fn/Silu");
    CHECK(n.inputs == std::vector<std::string>{"x"});
    CHECK(n.outputs == std::vector<std::string>{"y"});
    require_close(run_model(m, feeds()).at("y"), before.at("y"), 1e-6, 1e-7);
  }
}

TEST_CASE("silu_fusion: leaves a gated product and a sigmoid needed elsewhere", "[passes][fusion]") {
  Model gated = silu(true, "z");  // z * sigmoid(x): a GLU-style gate, not SiLU
  REQUIRE_FALSE(apply_pass("silu_fusion", gated));
  Model needed = silu(true, "x", true);
  REQUIRE_FALSE(apply_pass("silu_fusion", needed));
}
