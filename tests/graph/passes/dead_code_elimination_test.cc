// dead_code_elimination: unused nodes and initializers go, in one
// application; graph outputs, graph inputs and frozen values stay.
#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

std::map<std::string, Tensor> x_feed() { return {{"x", make<float>({2, 2}, {-1, 2, -3, 4})}}; }

}  // namespace

TEST_CASE("dead code elimination: dead chains and unread initializers go", "[passes][dead_code_elimination]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 2});
  add_initializer(g, "w", make<float>({2}, {1, 2}));          // read only by the dead chain
  add_initializer(g, "unused", make<float>({1}, {3}));        // read by nothing
  add_initializer(g, "trainable", make<float>({1}, {4}));     // frozen: kept though unread
  add_initializer(g, "fed", make<float>({1}, {5}));           // a graph input: kept
  add_input(g, "fed", DType::kFloat, {1});
  g.nodes.push_back(node("relu", "Relu", {"x"}, {"r"}));      // dead: only the dead Mul reads it
  g.nodes.push_back(node("mul", "Mul", {"r", "w"}, {"m"}));   // dead: nothing reads it
  g.nodes.push_back(node("abs", "Abs", {"x"}, {"y"}));
  g.nodes.push_back(node("sink", "Neg", {"y"}, {"unread"}));  // dead, reading a live value
  add_output(g, "y");
  g.declared_value_infos = {"m", "w"};
  auto before = run_model(m, {{"x", make<float>({2, 2}, {-1, 2, -3, 4})}, {"fed", make<float>({1}, {5})}});

  int64_t changed = 0;
  REQUIRE(apply_pass("dead_code_elimination", m, {"trainable"}, &changed));
  REQUIRE(g.nodes.size() == 1);
  REQUIRE(g.nodes[0].name == "abs");
  REQUIRE_FALSE(g.is_initializer("w"));
  REQUIRE_FALSE(g.is_initializer("unused"));
  REQUIRE(g.is_initializer("trainable"));
  REQUIRE(g.is_initializer("fed"));
  REQUIRE(g.initializer_order == std::vector<std::string>{"trainable", "fed"});
  REQUIRE(g.declared_value_infos == std::vector<std::string>{"m"});  // 'm' is left to the manager's cleanup
  REQUIRE(g.value("w") == nullptr);
  REQUIRE(changed == 5);  // 3 nodes + 2 initializers
  require_same_outputs(run_model(m, {{"x", make<float>({2, 2}, {-1, 2, -3, 4})}, {"fed", make<float>({1}, {5})}}),
                       before);
  REQUIRE_FALSE(apply_pass("dead_code_elimination", m, {"trainable"}, &changed));
  REQUIRE(changed == 0);
}

TEST_CASE("dead code elimination: a node with one used output stays whole", "[passes][dead_code_elimination]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 2});
  add_initializer(g, "split", make<int64_t>({2}, {1, 1}));
  g.nodes.push_back(node("split", "Split", {"x", "split"}, {"a", "b"}, {Attribute::make_int("axis", 0)}));
  g.nodes.push_back(node("neg", "Neg", {"b"}, {"y"}));
  add_output(g, "y");
  auto before = run_model(m, x_feed());
  REQUIRE_FALSE(apply_pass("dead_code_elimination", m));
  REQUIRE(g.nodes.size() == 2);
  REQUIRE(g.is_initializer("split"));
  require_same_outputs(run_model(m, x_feed()), before);
}

TEST_CASE("dead code elimination: a frozen value keeps its producer", "[passes][dead_code_elimination]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 2});
  g.nodes.push_back(node("relu", "Relu", {"x"}, {"r"}));
  g.nodes.push_back(node("neg", "Neg", {"r"}, {"kept"}));
  g.nodes.push_back(node("abs", "Abs", {"x"}, {"y"}));
  add_output(g, "y");
  REQUIRE_FALSE(apply_pass("dead_code_elimination", m, {"kept"}));
  REQUIRE(g.nodes.size() == 3);
  REQUIRE(apply_pass("dead_code_elimination", m));
  REQUIRE(g.nodes.size() == 1);
}

TEST_CASE("dead code elimination: an initializer that is a graph output stays", "[passes][dead_code_elimination]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_initializer(g, "c", make<float>({1}, {1}));
  add_output(g, "c");
  REQUIRE_FALSE(apply_pass("dead_code_elimination", m));
  REQUIRE(g.is_initializer("c"));
}
