// GraphIndex: producers and consumers, and that they stay right (equal to a
// freshly built index, graph still valid) through rewires, removals and
// insertions; graph outputs keep their names and values.
#include "graph/graph_index.h"

#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// x -> Relu -> r -> Neg -> n -> Add(n, r) -> y (output); w initializer read by Mul(r, w) -> m (output)
Model diamond() {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 3});
  add_initializer(g, "w", make<float>({3}, {1, 2, 3}));
  g.nodes.push_back(node("relu", "Relu", {"x"}, {"r"}));
  g.nodes.push_back(node("neg", "Neg", {"r"}, {"n"}));
  g.nodes.push_back(node("add", "Add", {"n", "r"}, {"y"}));
  g.nodes.push_back(node("mul", "Mul", {"r", "w"}, {"m"}));
  add_output(g, "y");
  add_output(g, "m");
  return m;
}

// Every value's producer and consumers match an index built from scratch.
void require_index_fresh(const GraphIndex& index, Graph& g) {
  GraphIndex fresh(g);
  std::set<std::string> names;
  for (const Node& n : g.nodes) {
    names.insert(n.inputs.begin(), n.inputs.end());
    names.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const std::string& v : names) {
    INFO("value " << v);
    REQUIRE(index.producer(v) == fresh.producer(v));
    REQUIRE(index.consumers(v) == fresh.consumers(v));
    REQUIRE(index.is_graph_output(v) == fresh.is_graph_output(v));
  }
  Status valid = verify_graph(g);
  INFO(valid.message());
  REQUIRE(valid.ok());
}

std::map<std::string, Tensor> feeds() { return {{"x", make<float>({2, 3}, {-1, 2, -3, 4, -5, 6})}}; }

}  // namespace

TEST_CASE("graph index: producers, consumers and graph outputs", "[passes][graph_index]") {
  Model m = diamond();
  GraphIndex index(m.graph);
  REQUIRE(index.producer("r") == std::optional<size_t>(0));
  REQUIRE(index.producer("y") == std::optional<size_t>(2));
  REQUIRE_FALSE(index.producer("x").has_value());  // graph input
  REQUIRE_FALSE(index.producer("w").has_value());  // initializer
  REQUIRE(index.consumers("r") == std::vector<GraphIndex::Use>{{1, 0}, {2, 1}, {3, 0}});
  REQUIRE(index.consumers("w") == std::vector<GraphIndex::Use>{{3, 1}});
  REQUIRE(index.consumers("y").empty());
  REQUIRE(index.is_graph_output("y"));
  REQUIRE_FALSE(index.is_graph_output("r"));
  REQUIRE(index.is_graph_input("x"));
  REQUIRE(index.is_used("y"));
  REQUIRE(index.is_used("n"));
  REQUIRE_FALSE(index.is_used("nothing"));
}

TEST_CASE("graph index: replacing an inner value rewires its readers", "[passes][graph_index]") {
  Model m = diamond();
  GraphIndex index(m.graph);
  REQUIRE(index.replace_all_uses("n", "r").ok());  // Add(r, r) now; Neg is dead
  REQUIRE(m.graph.nodes[2].inputs == std::vector<std::string>{"r", "r"});
  REQUIRE(index.consumers("n").empty());
  REQUIRE(index.consumers("r") == std::vector<GraphIndex::Use>{{1, 0}, {2, 0}, {2, 1}, {3, 0}});
  REQUIRE(m.graph.nodes.size() == 4);  // no Identity: 'n' is not a graph output
  require_index_fresh(index, m.graph);
}

TEST_CASE("graph index: a replaced graph output keeps its name through an Identity", "[passes][graph_index]") {
  // y2 = Relu(x) duplicates y1 = Relu(x); both are graph outputs, z reads y2.
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 3});
  g.nodes.push_back(node("a", "Relu", {"x"}, {"y1"}));
  g.nodes.push_back(node("b", "Relu", {"x"}, {"y2"}));
  g.nodes.push_back(node("c", "Neg", {"y2"}, {"z"}));
  add_output(g, "y1");
  add_output(g, "y2");
  add_output(g, "z");
  auto before = run_model(m, feeds());

  GraphIndex index(g);
  REQUIRE(index.replace_all_uses("y2", "y1").ok());
  require_index_fresh(index, g);
  REQUIRE(g.nodes[2].inputs[0] == "y1");
  REQUIRE(g.outputs[1].name == "y2");
  const Node& identity = g.nodes.back();
  REQUIRE(identity.op_type == "Identity");
  REQUIRE(identity.inputs == std::vector<std::string>{"y1"});
  REQUIRE(identity.outputs == std::vector<std::string>{"y2"});
  REQUIRE(index.producer("y2") == std::optional<size_t>(g.nodes.size() - 1));
  // The old producer writes a fresh, unread name and can go.
  const std::string dead = g.nodes[1].outputs[0];
  REQUIRE(dead != "y2");
  REQUIRE_FALSE(index.is_used(dead));
  index.remove_nodes({1});
  require_index_fresh(index, g);
  REQUIRE(g.nodes.size() == 3);
  require_same_outputs(run_model(m, feeds()), before);
}

TEST_CASE("graph index: a graph output that is an initializer stays an output", "[passes][graph_index]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {3});
  add_initializer(g, "c1", make<float>({3}, {1, 2, 3}));
  add_initializer(g, "c2", make<float>({3}, {1, 2, 3}));
  g.nodes.push_back(node("add", "Add", {"x", "c2"}, {"y"}));
  add_output(g, "y");
  add_output(g, "c2");
  GraphIndex index(g);
  REQUIRE(index.replace_all_uses("c2", "c1").ok());
  REQUIRE(g.nodes.size() == 1);
  REQUIRE(g.nodes[0].inputs[1] == "c1");
  REQUIRE(g.outputs[1].name == "c2");
  require_index_fresh(index, g);
}

TEST_CASE("graph index: replacements that would break the order are refused", "[passes][graph_index]") {
  Model m = diamond();
  GraphIndex index(m.graph);
  // 'n' is produced after Neg reads 'r': Neg cannot read its own output.
  Status st = index.replace_all_uses("r", "n");
  REQUIRE_FALSE(st.ok());
  REQUIRE_THAT(st.message(), Catch::Contains("neg"));
  REQUIRE_FALSE(index.replace_all_uses("r", "missing").ok());
  REQUIRE_FALSE(index.replace_all_uses("", "r").ok());
  REQUIRE(index.replace_all_uses("r", "r").ok());
  // Nothing changed by the refusals.
  REQUIRE(m.graph.nodes[1].inputs[0] == "r");
  require_index_fresh(index, m.graph);
}

TEST_CASE("graph index: removing nodes keeps the order and the index", "[passes][graph_index]") {
  Model m = diamond();
  Graph& g = m.graph;
  GraphIndex index(g);
  REQUIRE(index.replace_all_uses("n", "r").ok());
  index.remove_nodes({1, 1, 99});  // duplicates and out-of-range positions are ignored
  REQUIRE(g.nodes.size() == 3);
  REQUIRE(g.nodes[0].name == "relu");
  REQUIRE(g.nodes[1].name == "add");
  REQUIRE(g.nodes[2].name == "mul");
  REQUIRE(index.producer("y") == std::optional<size_t>(1));
  REQUIRE_FALSE(index.producer("n").has_value());
  require_index_fresh(index, g);
  index.remove_nodes({2, 1});
  REQUIRE(g.nodes.size() == 1);
  REQUIRE(index.consumers("r").empty());
}

TEST_CASE("graph index: inserting a node checks its place", "[passes][graph_index]") {
  Model m = diamond();
  Graph& g = m.graph;
  GraphIndex index(g);
  // Abs(r) fits anywhere after Relu.
  REQUIRE(index.insert_node(1, node("abs", "Abs", {"r"}, {"a"})).ok());
  REQUIRE(g.nodes[1].name == "abs");
  REQUIRE(index.producer("a") == std::optional<size_t>(1));
  REQUIRE(index.producer("y") == std::optional<size_t>(3));  // shifted by one
  require_index_fresh(index, g);
  // Before its input's producer: refused.
  Status early = index.insert_node(0, node("abs2", "Abs", {"r"}, {"a2"}));
  REQUIRE_FALSE(early.ok());
  REQUIRE_THAT(early.message(), Catch::Contains("relu"));
  // An output that exists already: refused.
  REQUIRE_FALSE(index.insert_node(2, node("dup", "Abs", {"x"}, {"n"})).ok());
  REQUIRE_FALSE(index.insert_node(2, node("dup", "Abs", {"x"}, {"w"})).ok());
  REQUIRE_FALSE(index.insert_node(99, node("far", "Abs", {"x"}, {"f"})).ok());
  REQUIRE(g.nodes.size() == 5);
  // Appending and then reading the new value from a rewire works.
  REQUIRE(index.insert_node(g.nodes.size(), node("tail", "Neg", {"y"}, {"t"})).ok());
  require_index_fresh(index, g);
}

TEST_CASE("graph index: fresh names avoid every existing name", "[passes][graph_index]") {
  Model m = diamond();
  GraphIndex index(m.graph);
  REQUIRE(index.fresh_value_name("q") == "q");
  REQUIRE(index.fresh_value_name("r") == "r_1");
  REQUIRE(index.fresh_value_name("w") == "w_1");
  REQUIRE(index.fresh_node_name("relu") == "relu_1");
  REQUIRE(index.fresh_node_name("other") == "other");
}

TEST_CASE("verify_graph reports what is wrong", "[passes][graph_index]") {
  Model m = diamond();
  REQUIRE(verify_graph(m.graph).ok());
  Model swapped = m;
  std::swap(swapped.graph.nodes[0], swapped.graph.nodes[1]);
  REQUIRE_THAT(verify_graph(swapped.graph).message(), Catch::Contains("neg"));
  Model twice = m;
  twice.graph.nodes[1].outputs[0] = "r";
  REQUIRE_THAT(verify_graph(twice.graph).message(), Catch::Contains("produced twice"));
  Model lost = m;
  lost.graph.outputs.push_back({"nowhere", DType::kFloat, std::nullopt, ""});
  REQUIRE_THAT(verify_graph(lost.graph).message(), Catch::Contains("nowhere"));
  Model order = m;
  order.graph.initializer_order.push_back("gone");
  REQUIRE_THAT(verify_graph(order.graph).message(), Catch::Contains("gone"));
}
