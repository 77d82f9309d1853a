// shape_hoisting: a Shape read late (as the backward's gradient sizing reads
// forward values) moves to just after its input's producer, so the input no
// longer lives until then; outputs unchanged, and a second run changes
// nothing; a Shape of a graph input stays.
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"
#include "runtime/executor.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("shape_hoisting: a late Shape moves next to its input's producer", "[passes]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "a", DType::kFloat, {64, 64});
  g.nodes.push_back(node("Relu", "Relu", {"a"}, {"x"}));  // x: 16 KiB, read by Tanh and (late) Shape
  g.nodes.push_back(node("Tanh", "Tanh", {"x"}, {"t"}));
  g.nodes.push_back(node("Exp", "Exp", {"t"}, {"u"}));
  g.nodes.push_back(node("Sigmoid", "Sigmoid", {"u"}, {"v"}));  // the peak: x no longer needs to be live here
  g.nodes.push_back(node("ReduceSum", "ReduceSum", {"v"}, {"e"}, {Attribute::make_int("keepdims", 0)}));
  g.nodes.push_back(node("Shape_a", "Shape", {"a"}, {"sa"}));
  g.nodes.push_back(node("Shape", "Shape", {"x"}, {"s"}));
  g.nodes.push_back(node("Concat", "Concat", {"s", "sa"}, {"y"}, {Attribute::make_int("axis", 0)}));
  add_output(g, "y");
  add_output(g, "e");
  REQUIRE(infer_shapes(m).ok());
  std::map<std::string, Tensor> in = {{"a", random_tensor({64, 64}, 61, -1.f, 1.f)}};
  auto before = run_model(m, in);
  size_t peak_before = estimate_memory(m).peak_activation_bytes;
  int64_t changed = 0;
  REQUIRE(apply_pass("shape_hoisting", m, {}, &changed));
  CHECK(changed == 1);
  CHECK(m.graph.nodes[1].name == "Shape");  // right after Relu
  CHECK(m.graph.nodes[6].name == "Shape_a");  // a graph input lives anyway: not moved
  CHECK(estimate_memory(m).peak_activation_bytes < peak_before);
  REQUIRE_FALSE(apply_pass("shape_hoisting", m));
  auto after = run_model(m, in);
  require_close(after.at("y"), before.at("y"), 0, 0);
  require_close(after.at("e"), before.at("e"), 0, 0);
}
