// layer_norm_fusion on the decomposition exporters emit before opset 17:
// fires in both operand orders and with opset 18's axes input, computes the
// same values, and leaves the nodes alone when an intermediate is needed
// elsewhere, eps is trainable, or the axes are not the last ones.
#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

struct LayerNormSpec {
  bool swapped = false;          // Add(eps, v), Mul(gamma, n), Add(beta, y)
  bool axes_input = false;       // ReduceMean's axes as an input (opset 18)
  std::vector<int64_t> axes = {-1};
  bool sub_is_output = false;    // the centred x is also a graph output
};

Model layer_norm_model(const LayerNormSpec& s) {
  Model m = empty_model();
  if (s.axes_input) m.opset_imports = {{"", 18}};
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 3, 4});
  add_initializer(g, "gamma", random_tensor({4}, 7, 0.5f, 1.5f));
  add_initializer(g, "beta", random_tensor({4}, 8));
  add_initializer(g, "two", make<float>({}, {2.f}));
  add_initializer(g, "eps", make<float>({}, {1e-5f}));
  std::vector<Attribute> attrs;
  std::vector<std::string> mean_in = {"x"}, var_in = {"sq"};
  if (s.axes_input) {
    add_initializer(g, "axes", make<int64_t>({static_cast<int64_t>(s.axes.size())}, s.axes));
    mean_in.push_back("axes");
    var_in.push_back("axes");
  } else {
    attrs.push_back(Attribute::make_ints("axes", s.axes));
  }
  auto pair = [&](const std::string& a, const std::string& b) {
    return s.swapped ? std::vector<std::string>{b, a} : std::vector<std::string>{a, b};
  };
  g.nodes.push_back(node("ln/mean", "ReduceMean", mean_in, {"mean"}, attrs));
  g.nodes.push_back(node("ln/sub", "Sub", {"x", "mean"}, {"d"}));
  g.nodes.push_back(node("ln/pow", "Pow", {"d", "two"}, {"sq"}));
  g.nodes.push_back(node("ln/var", "ReduceMean", var_in, {"var"}, attrs));
  g.nodes.push_back(node("ln/add_eps", "Add", pair("var", "eps"), {"ve"}));
  g.nodes.push_back(node("ln/sqrt", "Sqrt", {"ve"}, {"std"}));
  g.nodes.push_back(node("ln/div", "Div", {"d", "std"}, {"n"}));
  g.nodes.push_back(node("ln/mul", "Mul", pair("n", "gamma"), {"scaled"}));
  g.nodes.push_back(node("ln/add", "Add", pair("scaled", "beta"), {"y"}));
  add_output(g, "y");
  if (s.sub_is_output) add_output(g, "d");
  return m;
}

std::map<std::string, Tensor> feeds() { return {{"x", random_tensor({2, 3, 4}, 3, -2.f, 2.f)}}; }

}  // namespace

TEST_CASE("layer_norm_fusion: the opset-12 decomposition becomes one LayerNormalization", "[passes][fusion]") {
  for (bool swapped : {false, true}) {
    INFO("swapped operands: " << swapped);
    Model m = layer_norm_model({.swapped = swapped});
    auto before = run_model(m, feeds());
    int64_t changed = 0;
    REQUIRE(apply_pass("layer_norm_fusion", m, {"gamma", "beta"}, &changed));
    REQUIRE(m.graph.nodes.size() == 1);
    const Node& ln = m.graph.nodes[0];
    CHECK(ln.op_type == "LayerNormalization");
    CHECK(ln.domain == kOrtTrainDomain);
    CHECK(ln.name == "ln/LayerNormalization");
    CHECK(ln.inputs == std::vector<std::string>{"x", "gamma", "beta"});
    CHECK(ln.attr_int("axis", 0) == -1);
    CHECK(ln.attr_float("epsilon", 0) == 1e-5f);
    CHECK(changed == 8);
    auto after = run_model(m, feeds());
    require_close(after.at("y"), before.at("y"), 1e-5, 1e-5);
  }
}

TEST_CASE("layer_norm_fusion: axes as an input (opset 18) and over the last two axes", "[passes][fusion]") {
  Model m = layer_norm_model({.axes_input = true, .axes = {-1}});
  auto before = run_model(m, feeds());
  REQUIRE(apply_pass("layer_norm_fusion", m));
  REQUIRE(count_op(m, "LayerNormalization") == 1);
  require_close(run_model(m, feeds()).at("y"), before.at("y"), 1e-5, 1e-5);
  // axes {1, 2} of a rank-3 input: the last two, but gamma covers only the last one, so no fusion.
  Model two = layer_norm_model({.axes = {1, 2}});
  REQUIRE_FALSE(apply_pass("layer_norm_fusion", two));
}

TEST_CASE("layer_norm_fusion: leaves patterns it cannot replace exactly", "[passes][fusion]") {
  SECTION("an intermediate is a graph output") {
    Model m = layer_norm_model({.sub_is_output = true});
    REQUIRE_FALSE(apply_pass("layer_norm_fusion", m));
    REQUIRE(m.graph.nodes.size() == 9);
  }
  SECTION("eps is trainable") {
    Model m = layer_norm_model({});
    REQUIRE_FALSE(apply_pass("layer_norm_fusion", m, {"eps"}));
  }
  SECTION("the axes are not the last ones") {
    Model m = layer_norm_model({.axes = {1}});
    REQUIRE_FALSE(apply_pass("layer_norm_fusion", m));
  }
}
