// common_subexpression_elimination: equal nodes merge (whole chains in one
// application), different attributes and random ops do not, graph outputs
// keep their names, identical small initializers merge unless frozen.
#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

std::map<std::string, Tensor> x_feed() { return {{"x", make<float>({2, 3}, {-1, 2, -3, 4, -5, 6})}}; }

Model with_input() {
  Model m = empty_model();
  add_input(m.graph, "x", DType::kFloat, {2, 3});
  return m;
}

}  // namespace

TEST_CASE("cse: equal chains merge in one application", "[passes][cse]") {
  Model m = with_input();
  Graph& g = m.graph;
  g.nodes.push_back(node("relu1", "Relu", {"x"}, {"a1"}));
  g.nodes.push_back(node("relu2", "Relu", {"x"}, {"a2"}));
  g.nodes.push_back(node("neg1", "Neg", {"a1"}, {"n1"}));
  g.nodes.push_back(node("neg2", "Neg", {"a2"}, {"n2"}));
  g.nodes.push_back(node("add", "Add", {"n1", "n2"}, {"y"}));
  add_output(g, "y");
  auto before = run_model(m, x_feed());
  int64_t changed = 0;
  REQUIRE(apply_pass("common_subexpression_elimination", m, {}, &changed));
  REQUIRE(changed == 2);
  REQUIRE(g.nodes.size() == 3);
  REQUIRE(g.nodes[0].name == "relu1");
  REQUIRE(g.nodes[1].name == "neg1");
  REQUIRE(g.nodes[2].inputs == std::vector<std::string>{"n1", "n1"});
  require_same_outputs(run_model(m, x_feed()), before);
  REQUIRE_FALSE(apply_pass("common_subexpression_elimination", m, {}, &changed));
}

TEST_CASE("cse: attributes decide, in any order", "[passes][cse]") {
  Model m = with_input();
  Graph& g = m.graph;
  auto alpha = [](float v) { return Attribute::make_float("alpha", v); };
  auto beta = [](float v) { return Attribute::make_float("beta", v); };
  g.nodes.push_back(node("s0", "Softmax", {"x"}, {"s0"}, {Attribute::make_int("axis", 0)}));
  g.nodes.push_back(node("s1", "Softmax", {"x"}, {"s1"}, {Attribute::make_int("axis", 1)}));
  g.nodes.push_back(node("s0b", "Softmax", {"x"}, {"s0b"}, {Attribute::make_int("axis", 0)}));
  g.nodes.push_back(node("l1", "LeakyRelu", {"x"}, {"l1"}, {alpha(0.1f)}));
  g.nodes.push_back(node("l2", "LeakyRelu", {"x"}, {"l2"}, {alpha(0.2f)}));
  g.nodes.push_back(node("l1b", "LeakyRelu", {"x"}, {"l1b"}, {alpha(0.1f)}));
  // The same attributes listed in another order are the same node.
  add_initializer(g, "w", make<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  g.nodes.push_back(node("gemm1", "Gemm", {"x", "w"}, {"g1"}, {alpha(2.f), beta(1.f)}));
  g.nodes.push_back(node("gemm2", "Gemm", {"x", "w"}, {"g2"}, {beta(1.f), alpha(2.f)}));
  for (const char* o : {"s0", "s1", "s0b", "l1", "l2", "l1b", "g1", "g2"}) add_output(g, o);
  auto before = run_model(m, x_feed());
  REQUIRE(apply_pass("common_subexpression_elimination", m));
  // s0b, l1b and gemm2 became Identities of s0, l1 and g1 (they are graph outputs).
  REQUIRE(count_op(m, "Softmax") == 2);
  REQUIRE(count_op(m, "LeakyRelu") == 2);
  REQUIRE(count_op(m, "Gemm") == 1);
  REQUIRE(count_op(m, "Identity") == 3);
  require_same_outputs(run_model(m, x_feed()), before);
}

TEST_CASE("cse: random ops are never merged", "[passes][cse]") {
  Model m = with_input();
  Graph& g = m.graph;
  add_initializer(g, "ratio", make<float>({}, {0.5f}));
  add_initializer(g, "on", make<bool>({}, {true}));
  g.nodes.push_back(node("d1", "Dropout", {"x", "ratio", "on"}, {"d1"}));
  g.nodes.push_back(node("d2", "Dropout", {"x", "ratio", "on"}, {"d2"}));
  g.nodes.push_back(node("add", "Add", {"d1", "d2"}, {"y"}));
  add_output(g, "y");
  int64_t changed = 0;
  REQUIRE_FALSE(apply_pass("common_subexpression_elimination", m, {}, &changed));
  REQUIRE(changed == 0);
  REQUIRE(count_op(m, "Dropout") == 2);
}

TEST_CASE("cse: a duplicate graph output keeps its name through an Identity", "[passes][cse]") {
  Model m = with_input();
  Graph& g = m.graph;
  g.nodes.push_back(node("r1", "Relu", {"x"}, {"y1"}));
  g.nodes.push_back(node("r2", "Relu", {"x"}, {"y2"}));
  g.nodes.push_back(node("neg", "Neg", {"y2"}, {"z"}));
  add_output(g, "y1");
  add_output(g, "y2");
  add_output(g, "z");
  auto before = run_model(m, x_feed());
  int64_t changed = 0;
  REQUIRE(apply_pass("common_subexpression_elimination", m, {}, &changed));
  REQUIRE(changed == 2);  // Relu removed, Identity added
  REQUIRE(count_op(m, "Relu") == 1);
  REQUIRE(count_op(m, "Identity") == 1);
  REQUIRE(g.outputs[1].name == "y2");
  require_same_outputs(run_model(m, x_feed()), before);
  // The Identity is not merged again: the pass reaches a fixed point.
  REQUIRE_FALSE(apply_pass("common_subexpression_elimination", m, {}, &changed));
  REQUIRE(changed == 0);
}

TEST_CASE("cse: a duplicate writing a frozen value stays", "[passes][cse]") {
  Model m = with_input();
  Graph& g = m.graph;
  g.nodes.push_back(node("r1", "Relu", {"x"}, {"a"}));
  g.nodes.push_back(node("r2", "Relu", {"x"}, {"b"}));
  g.nodes.push_back(node("add", "Add", {"a", "b"}, {"y"}));
  add_output(g, "y");
  REQUIRE_FALSE(apply_pass("common_subexpression_elimination", m, {"b"}));
  REQUIRE(count_op(m, "Relu") == 2);
}

TEST_CASE("cse: identical small initializers merge unless frozen", "[passes][cse]") {
  Model m = with_input();
  Graph& g = m.graph;
  add_initializer(g, "c1", make<float>({3}, {1, 2, 3}));
  add_initializer(g, "c2", make<float>({3}, {1, 2, 3}));
  add_initializer(g, "c3", make<float>({3}, {1, 2, 4}));         // other bytes
  add_initializer(g, "c4", make<double>({3}, {1, 2, 3}));        // other dtype
  add_initializer(g, "p1", make<float>({3}, {1, 2, 3}));         // frozen (trainable)
  g.nodes.push_back(node("a1", "Add", {"x", "c1"}, {"y1"}));
  g.nodes.push_back(node("a2", "Add", {"x", "c2"}, {"t2"}));
  g.nodes.push_back(node("a3", "Add", {"x", "c3"}, {"y3"}));
  g.nodes.push_back(node("cast", "Cast", {"c4"}, {"c4f"}, {Attribute::make_int("to", 1)}));
  g.nodes.push_back(node("a4", "Add", {"x", "c4f"}, {"y4"}));
  g.nodes.push_back(node("ap", "Add", {"x", "p1"}, {"yp"}));
  g.nodes.push_back(node("sum", "Add", {"t2", "y1"}, {"y2"}));
  for (const char* o : {"y1", "y2", "y3", "y4", "yp"}) add_output(g, o);
  auto before = run_model(m, x_feed());
  int64_t changed = 0;
  REQUIRE(apply_pass("common_subexpression_elimination", m, {"p1"}, &changed));
  REQUIRE_FALSE(g.is_initializer("c2"));
  REQUIRE(g.value("c2") == nullptr);
  REQUIRE(std::find(g.initializer_order.begin(), g.initializer_order.end(), "c2") == g.initializer_order.end());
  REQUIRE(g.is_initializer("c3"));
  REQUIRE(g.is_initializer("c4"));
  REQUIRE(g.is_initializer("p1"));
  REQUIRE(count_op(m, "Add") == 5);  // a2 merged into a1 once both read c1
  REQUIRE(changed == 2);             // one initializer, one node
  require_same_outputs(run_model(m, x_feed()), before);
}
