// memory_aware_order: a node that frees an intermediate (its last reader)
// runs as soon as its inputs are ready instead of behind nodes that
// allocate; outputs unchanged; nothing moves where sizes are not bound
// (before the backward) or where the order is already as good.
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"
#include "runtime/executor.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// Two 64 KiB intermediates, each reduced by its last reader, written in the
// order a reverse walk of two branches gives: both big values live at once.
Model two_branches() {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {128, 128});
  g.nodes.push_back(node("Exp", "Exp", {"x"}, {"a"}));
  g.nodes.push_back(node("Tanh", "Tanh", {"x"}, {"b"}));
  g.nodes.push_back(node("SumA", "ReduceSum", {"a"}, {"sa"}, {Attribute::make_int("keepdims", 0)}));
  g.nodes.push_back(node("SumB", "ReduceSum", {"b"}, {"sb"}, {Attribute::make_int("keepdims", 0)}));
  g.nodes.push_back(node("Add", "Add", {"sa", "sb"}, {"y"}));
  add_output(g, "y");
  return m;
}

}  // namespace

TEST_CASE("memory_aware_order: a node that frees memory runs as soon as it can", "[passes]") {
  Model m = two_branches();
  REQUIRE(infer_shapes(m).ok());
  std::map<std::string, Tensor> in = {{"x", random_tensor({128, 128}, 5, -1.f, 1.f)}};
  auto before = run_model(m, in);
  size_t peak_before = estimate_memory(m).peak_activation_bytes;
  CHECK(peak_before >= 2 * 128 * 128 * sizeof(float));

  SECTION("sizes not bound yet (the forward before its backward): left alone") {
    REQUIRE_FALSE(apply_pass("memory_aware_order", m));
  }
  SECTION("in a training graph: SumA moves before Tanh, one big value lives at a time") {
    int64_t changed = 0;
    REQUIRE(apply_pass("memory_aware_order", m, {}, &changed, /*shapes_bound=*/true));
    CHECK(changed == 2);  // SumA and Tanh swap places
    std::vector<std::string> order;
    for (const Node& n : m.graph.nodes) order.push_back(n.name);
    CHECK(order == std::vector<std::string>{"Exp", "SumA", "Tanh", "SumB", "Add"});
    CHECK(estimate_memory(m).peak_activation_bytes < peak_before);
    REQUIRE_FALSE(apply_pass("memory_aware_order", m, {}, nullptr, true));  // settled
    auto after = run_model(m, in);
    require_close(after.at("y"), before.at("y"), 0, 0);
  }
}

TEST_CASE("memory_aware_order: an order as good as it gets is kept", "[passes]") {
  Model m = two_branches();
  // Already each big value reduced before the next is made.
  std::swap(m.graph.nodes[1], m.graph.nodes[2]);
  REQUIRE(infer_shapes(m).ok());
  REQUIRE_FALSE(apply_pass("memory_aware_order", m, {}, nullptr, true));
}

TEST_CASE("memory_aware_order: graph outputs and views count as the executor holds them", "[passes]") {
  // b is a graph output (it lives to the end whatever the order); a's view
  // keeps a alive until the view's own reader.
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {128, 128});
  add_initializer(g, "flat", make<int64_t>({1}, {-1}));
  g.nodes.push_back(node("Exp", "Exp", {"x"}, {"a"}));
  g.nodes.push_back(node("View", "Reshape", {"a", "flat"}, {"av"}));
  g.nodes.push_back(node("Tanh", "Tanh", {"x"}, {"b"}));
  g.nodes.push_back(node("Sigmoid", "Sigmoid", {"x"}, {"c"}));
  g.nodes.push_back(node("SumC", "ReduceSum", {"c"}, {"sc"}, {Attribute::make_int("keepdims", 0)}));
  g.nodes.push_back(node("SumA", "ReduceSum", {"av"}, {"sa"}, {Attribute::make_int("keepdims", 0)}));
  g.nodes.push_back(node("Add", "Add", {"sa", "sc"}, {"y"}));
  add_output(g, "y");
  add_output(g, "b");
  REQUIRE(infer_shapes(m).ok());
  REQUIRE(apply_pass("memory_aware_order", m, {}, nullptr, true));
  std::vector<std::string> order;
  for (const Node& n : m.graph.nodes) order.push_back(n.name);
  // SumA (reading a through its view) frees a before Sigmoid makes c; Tanh's
  // output is an output, so where it runs does not matter and it keeps its place.
  CHECK(order == std::vector<std::string>{"Exp", "View", "SumA", "Tanh", "Sigmoid", "SumC", "Add"});
}
