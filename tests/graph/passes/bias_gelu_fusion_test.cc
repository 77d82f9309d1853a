// bias_gelu_fusion on a Linear layer's activation: Gelu(x + b), the bias
// either operand, both GELU forms, becomes one BiasGelu with bit-identical
// values; it takes the bias before matmul_add_fusion can; a bias of another
// shape, or a sum needed elsewhere, is left alone.
#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

struct Activation {
  Dims bias_dims = {6};
  bool bias_first = true;
  std::string approximate = "none";
  bool sum_is_output = false;
};

// y = Gelu(x @ w + b) over [2, 3, 4] x, [4, 6] w.
Model activation(const Activation& a) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 3, 4});
  add_initializer(g, "w", random_tensor({4, 6}, 41, -1.f, 1.f));
  add_initializer(g, "b", random_tensor(a.bias_dims, 42, -1.f, 1.f));
  g.nodes.push_back(node("fc/MatMul", "MatMul", {"x", "w"}, {"p"}));
  g.nodes.push_back(node("fc/Add", "Add", a.bias_first ? std::vector<std::string>{"b", "p"}
                                                       : std::vector<std::string>{"p", "b"}, {"s"}));
  g.nodes.push_back(node("act/Gelu", "Gelu", {"s"}, {"y"}, {Attribute::make_string("approximate", a.approximate)}));
  g.nodes.back().domain = kOrtTrainDomain;  // as gelu_fusion writes it
  m.opset_imports.push_back({kOrtTrainDomain, 1});
  add_output(g, "y");
  if (a.sum_is_output) add_output(g, "s");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

std::map<std::string, Tensor> feeds() { return {{"x", random_tensor({2, 3, 4}, 43, -2.f, 2.f)}}; }

}  // namespace

TEST_CASE("bias_gelu_fusion: Gelu(x @ w + b) keeps the MatMul and becomes one BiasGelu, bit for bit",
          "[passes][fusion]") {
  for (Activation a : {Activation{}, Activation{.bias_first = false}, Activation{.approximate = "tanh"}}) {
    INFO("bias first: " << a.bias_first << ", approximate: " << a.approximate);
    Model m = activation(a);
    auto before = run_model(m, feeds());
    int64_t changed = 0;
    REQUIRE(apply_pass("bias_gelu_fusion", m, {}, &changed));
    CHECK(changed == 1);
    REQUIRE_FALSE(apply_pass("matmul_add_fusion", m));  // the bias is taken
    REQUIRE(m.graph.nodes.size() == 2);
    const Node& n = m.graph.nodes[1];
    CHECK(n.op_type == "BiasGelu");
    CHECK(n.inputs == std::vector<std::string>{"p", "b"});
    CHECK(n.attr_string("approximate", "") == a.approximate);
    require_close(run_model(m, feeds()).at("y"), before.at("y"), 0, 0);
  }
}

TEST_CASE("bias_gelu_fusion: a bias of another shape, or a sum needed elsewhere, stays", "[passes][fusion]") {
  Model rows = activation({.bias_dims = {3, 6}});
  REQUIRE_FALSE(apply_pass("bias_gelu_fusion", rows));
  Model needed = activation({.sum_is_output = true});
  REQUIRE_FALSE(apply_pass("bias_gelu_fusion", needed));
}
