// rms_norm_fusion on RMSNorm as Llama and T5 exports spell it (rsqrt as
// Div(1, Sqrt) with Hugging Face's Cast to float, or Reciprocal, or a
// direct Div): each becomes one SimplifiedLayerNormalization computing the
// same values; a wrong power, a missing weight or an intermediate needed
// elsewhere leaves the nodes alone.
#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

enum class Rsqrt { kDivOneWithCast, kReciprocal, kDivX };

Model rms_norm(Rsqrt form, float power = 2.f, bool weight = true, bool sqrt_is_output = false) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x0", DType::kFloat, {2, 3, 8});
  add_initializer(g, "weight", random_tensor({8}, 7, 0.5f, 1.5f));
  add_initializer(g, "power", make<float>({}, {power}));
  add_initializer(g, "eps", make<float>({}, {1e-6f}));
  add_initializer(g, "one", make<float>({}, {1.f}));
  const int64_t to_float = static_cast<int64_t>(DType::kFloat);
  g.nodes.push_back(node("norm/Cast", "Cast", {"x0"}, {"x"}, {Attribute::make_int("to", to_float)}));
  g.nodes.push_back(node("norm/Pow", "Pow", {"x", "power"}, {"sq"}));
  g.nodes.push_back(node("norm/ReduceMean", "ReduceMean", {"sq"}, {"var"},
                         {Attribute::make_ints("axes", {-1}), Attribute::make_int("keepdims", 1)}));
  g.nodes.push_back(node("norm/Add", "Add", {"var", "eps"}, {"v"}));
  g.nodes.push_back(node("norm/Sqrt", "Sqrt", {"v"}, {"s"}));
  std::string normed = "n";
  switch (form) {
    case Rsqrt::kDivOneWithCast:
      g.nodes.push_back(node("norm/Div", "Div", {"one", "s"}, {"r"}));
      g.nodes.push_back(node("norm/Mul", "Mul", {"x", "r"}, {"n0"}));
      g.nodes.push_back(node("norm/Cast_1", "Cast", {"n0"}, {"n"}, {Attribute::make_int("to", to_float)}));
      break;
    case Rsqrt::kReciprocal:
      g.nodes.push_back(node("norm/Reciprocal", "Reciprocal", {"s"}, {"r"}));
      g.nodes.push_back(node("norm/Mul", "Mul", {"r", "x"}, {"n"}));
      break;
    case Rsqrt::kDivX:
      g.nodes.push_back(node("norm/Div", "Div", {"x", "s"}, {"n"}));
      break;
  }
  if (weight) {
    g.nodes.push_back(node("norm/Mul_1", "Mul", {"weight", normed}, {"y"}));
  } else {
    g.nodes.push_back(node("norm/Identity", "Identity", {normed}, {"y"}));
  }
  add_output(g, "y");
  if (sqrt_is_output) add_output(g, "s");
  return m;
}

std::map<std::string, Tensor> feeds() { return {{"x0", random_tensor({2, 3, 8}, 11, -3.f, 3.f)}}; }

}  // namespace

TEST_CASE("rms_norm_fusion: Llama's, T5's and the direct spelling become SimplifiedLayerNormalization",
          "[passes][fusion]") {
  for (Rsqrt form : {Rsqrt::kDivOneWithCast, Rsqrt::kReciprocal, Rsqrt::kDivX}) {
    INFO("form " << static_cast<int>(form));
    Model m = rms_norm(form);
    auto before = run_model(m, feeds());
    REQUIRE(apply_pass("rms_norm_fusion", m));
    REQUIRE(count_op(m, "SimplifiedLayerNormalization") == 1);
    REQUIRE(m.graph.nodes.size() == 2);  // the leading Cast stays: x is its output
    const Node& n = m.graph.nodes[1];
    CHECK(n.domain == kOrtTrainDomain);
    CHECK(n.name == "norm/SimplifiedLayerNormalization");
    CHECK(n.inputs == std::vector<std::string>{"x", "weight"});
    CHECK(n.outputs == std::vector<std::string>{"y"});
    CHECK(n.attr_int("axis", 0) == -1);
    CHECK(n.attr_float("epsilon", 0) == 1e-6f);
    require_close(run_model(m, feeds()).at("y"), before.at("y"), 1e-5, 1e-6);
  }
}

TEST_CASE("rms_norm_fusion: leaves look-alikes and needed intermediates", "[passes][fusion]") {
  Model cube = rms_norm(Rsqrt::kDivOneWithCast, 3.f);
  REQUIRE_FALSE(apply_pass("rms_norm_fusion", cube));
  Model no_weight = rms_norm(Rsqrt::kDivX, 2.f, false);
  REQUIRE_FALSE(apply_pass("rms_norm_fusion", no_weight));
  Model needed = rms_norm(Rsqrt::kReciprocal, 2.f, true, true);
  REQUIRE_FALSE(apply_pass("rms_norm_fusion", needed));
}

TEST_CASE("fusions: a file's node with too few inputs is no pattern (passes run before any arity check)",
          "[passes][fusion]") {
  Model m = rms_norm(Rsqrt::kDivX);
  for (Node& n : m.graph.nodes)
    if (n.op_type == "Pow") n.inputs.pop_back();  // Pow(x): the exponent is missing
  for (const char* pass : {"rms_norm_fusion", "layer_norm_fusion", "gelu_fusion", "silu_fusion"}) {
    INFO(pass);
    REQUIRE_FALSE(apply_pass(pass, m));
  }
}
