// gelu_fusion on the GELU spellings of BERT (Erf) and GPT-2 (Tanh) exports:
// each form and order becomes one Gelu with the right `approximate`,
// computing the same values; a wrong constant or an intermediate needed
// elsewhere leaves the nodes alone.
#include <cmath>

#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

void add_scalar(Graph& g, const std::string& name, float v) { add_initializer(g, name, make<float>({}, {v})); }

// 0.5 * x * (1 + erf(x / sqrt2)); `half_first`: (x * 0.5) * (1 + ...), with x * (1/sqrt2).
Model erf_gelu(bool half_first, float root2 = std::sqrt(2.f), bool erf_is_output = false) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {3, 5});
  add_scalar(g, "one", 1.f);
  add_scalar(g, "half", 0.5f);
  if (half_first) {
    add_scalar(g, "inv_root2", 1.f / root2);
    g.nodes.push_back(node("act/scale", "Mul", {"inv_root2", "x"}, {"a"}));
  } else {
    add_scalar(g, "root2", root2);
    g.nodes.push_back(node("act/div", "Div", {"x", "root2"}, {"a"}));
  }
  g.nodes.push_back(node("act/erf", "Erf", {"a"}, {"e"}));
  g.nodes.push_back(node("act/add", "Add", {"one", "e"}, {"b"}));
  if (half_first) {
    g.nodes.push_back(node("act/half", "Mul", {"x", "half"}, {"h"}));
    g.nodes.push_back(node("act/mul", "Mul", {"b", "h"}, {"y"}));
  } else {
    g.nodes.push_back(node("act/mul", "Mul", {"x", "b"}, {"c"}));
    g.nodes.push_back(node("act/half", "Mul", {"c", "half"}, {"y"}));
  }
  add_output(g, "y");
  if (erf_is_output) add_output(g, "e");
  return m;
}

// GPT-2's gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
// `cube_as_muls`: x^3 as x * (x * x), as PyTorch exports F.gelu(approximate="tanh").
Model tanh_gelu(bool cube_as_muls = false) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {3, 5});
  add_scalar(g, "half", 0.5f);
  add_scalar(g, "three", 3.f);
  add_scalar(g, "c", 0.044715f);
  add_scalar(g, "k", std::sqrt(2.f / static_cast<float>(M_PI)));
  add_scalar(g, "one", 1.f);
  g.nodes.push_back(node("mlp/act/Mul", "Mul", {"x", "half"}, {"h"}));
  if (cube_as_muls) {
    g.nodes.push_back(node("mlp/act/Square", "Mul", {"x", "x"}, {"x2"}));
    g.nodes.push_back(node("mlp/act/Cube", "Mul", {"x", "x2"}, {"p"}));
  } else {
    g.nodes.push_back(node("mlp/act/Pow", "Pow", {"x", "three"}, {"p"}));
  }
  g.nodes.push_back(node("mlp/act/Mul_1", "Mul", {"p", "c"}, {"q"}));
  g.nodes.push_back(node("mlp/act/Add", "Add", {"x", "q"}, {"r"}));
  g.nodes.push_back(node("mlp/act/Mul_2", "Mul", {"r", "k"}, {"s"}));
  g.nodes.push_back(node("mlp/act/Tanh", "Tanh", {"s"}, {"t"}));
  g.nodes.push_back(node("mlp/act/Add_1", "Add", {"t", "one"}, {"u"}));
  g.nodes.push_back(node("mlp/act/Mul_3", "Mul", {"h", "u"}, {"y"}));
  add_output(g, "y");
  return m;
}

std::map<std::string, Tensor> feeds() { return {{"x", random_tensor({3, 5}, 11, -3.f, 3.f)}}; }

void require_one_gelu(const Model& m, const std::string& approximate) {
  REQUIRE(m.graph.nodes.size() == 1);
  const Node& n = m.graph.nodes[0];
  CHECK(n.op_type == "Gelu");
  CHECK(n.domain == kOrtTrainDomain);
  CHECK(n.inputs == std::vector<std::string>{"x"});
  CHECK(n.outputs == std::vector<std::string>{"y"});
  CHECK(n.attr_string("approximate", "") == approximate);
}

}  // namespace

TEST_CASE("gelu_fusion: BERT's Erf form, in both orders, becomes Gelu", "[passes][fusion]") {
  for (bool half_first : {false, true}) {
    INFO("half first: " << half_first);
    Model m = erf_gelu(half_first);
    auto before = run_model(m, feeds());
    REQUIRE(apply_pass("gelu_fusion", m));
    require_one_gelu(m, "none");
    require_close(run_model(m, feeds()).at("y"), before.at("y"), 1e-5, 1e-6);
  }
}

TEST_CASE("gelu_fusion: GPT-2's Tanh form becomes Gelu(approximate=tanh)", "[passes][fusion]") {
  Model m = tanh_gelu();
  auto before = run_model(m, feeds());
  int64_t changed = 0;
  REQUIRE(apply_pass("gelu_fusion", m, {}, &changed));
  require_one_gelu(m, "tanh");
  CHECK(m.graph.nodes[0].name == "mlp/act/Gelu");
  CHECK(changed == 7);
  require_close(run_model(m, feeds()).at("y"), before.at("y"), 1e-5, 1e-6);
}

TEST_CASE("gelu_fusion: the Tanh form with x^3 as x * (x * x) becomes Gelu(approximate=tanh)", "[passes][fusion]") {
  Model m = tanh_gelu(true);
  auto before = run_model(m, feeds());
  int64_t changed = 0;
  REQUIRE(apply_pass("gelu_fusion", m, {}, &changed));
  require_one_gelu(m, "tanh");
  CHECK(changed == 8);
  require_close(run_model(m, feeds()).at("y"), before.at("y"), 1e-5, 1e-6);
}

TEST_CASE("gelu_fusion: leaves look-alikes and needed intermediates", "[passes][fusion]") {
  Model wrong_constant = erf_gelu(false, 2.f);
  REQUIRE_FALSE(apply_pass("gelu_fusion", wrong_constant));
  Model needed = erf_gelu(false, std::sqrt(2.f), true);
  REQUIRE_FALSE(apply_pass("gelu_fusion", needed));
}
