// redundant_node_elimination: an Identity, a Cast to the type a value has, and
// an Unsqueeze undoing a Squeeze of the same axes are bypassed (their readers
// read the input) and removed, outputs unchanged; a Cast that converts,
// another axis, and a graph output stay; a Reshape of a Reshape reads the
// first one's input.
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// y = Unsqueeze(Squeeze(Cast(Identity(x), to), axes_a), axes_b) + x, x: [2, 1, 3] float.
Model chain(int64_t cast_to, int64_t unsqueeze_axis, bool identity_is_output = false) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 1, 3});
  add_initializer(g, "axes_a", make<int64_t>({1}, {1}));
  add_initializer(g, "axes_b", make<int64_t>({1}, {unsqueeze_axis}));
  g.nodes.push_back(node("Identity", "Identity", {"x"}, {"i"}));
  g.nodes.push_back(node("Cast", "Cast", {"i"}, {"c"}, {Attribute::make_int("to", cast_to)}));
  g.nodes.push_back(node("Squeeze", "Squeeze", {"c", "axes_a"}, {"s"}));
  g.nodes.push_back(node("Unsqueeze", "Unsqueeze", {"s", "axes_b"}, {"u"}));
  g.nodes.push_back(node("Cast_1", "Cast", {"u"}, {"f"}, {Attribute::make_int("to", 1)}));
  g.nodes.push_back(node("Sum", "Sum", {"f", "x"}, {"y"}));
  add_output(g, "y");
  if (identity_is_output) add_output(g, "i");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

std::map<std::string, Tensor> feeds() { return {{"x", random_tensor({2, 1, 3}, 51, -2.f, 2.f)}}; }
std::map<std::string, Tensor> feeds3() { return {{"x", random_tensor({2, 3, 4}, 52, -2.f, 2.f)}}; }

}  // namespace

TEST_CASE("redundant_node_elimination: Identity, a same-type Cast and Squeeze-Unsqueeze go", "[passes]") {
  Model m = chain(/*float*/ 1, 1);
  auto before = run_model(m, feeds());
  int64_t changed = 0;
  REQUIRE(apply_pass("redundant_node_elimination", m, {}, &changed));
  CHECK(changed == 4);  // Identity, both Casts, the Unsqueeze (the Squeeze is left to dead code elimination)
  REQUIRE(apply_pass("dead_code_elimination", m));
  REQUIRE(m.graph.nodes.size() == 1);
  CHECK(m.graph.nodes[0].inputs == std::vector<std::string>{"x", "x"});
  require_close(run_model(m, feeds()).at("y"), before.at("y"), 0, 0);
}

TEST_CASE("redundant_node_elimination: a converting Cast, another axis and a graph output stay", "[passes]") {
  Model m = chain(/*double*/ 11, 0, /*identity_is_output=*/true);
  auto before = run_model(m, feeds());
  int64_t changed = 0;
  apply_pass("redundant_node_elimination", m, {}, &changed);
  CHECK(changed == 0);
  CHECK(count_op(m, "Identity") == 1);
  CHECK(count_op(m, "Cast") == 2);
  CHECK(count_op(m, "Unsqueeze") == 1);
  require_close(run_model(m, feeds()).at("y"), before.at("y"), 0, 0);
}

TEST_CASE("redundant_node_elimination: Reshape of a Reshape reads the first input, unless a 0 copies a dim",
          "[passes]") {
  for (bool zero : {false, true}) {
    Model m = empty_model();
    Graph& g = m.graph;
    add_input(g, "x", DType::kFloat, {2, 3, 4});
    add_initializer(g, "a", make<int64_t>({2}, {6, 4}));
    add_initializer(g, "b", zero ? make<int64_t>({2}, {0, -1}) : make<int64_t>({3}, {4, 3, 2}));
    g.nodes.push_back(node("Reshape", "Reshape", {"x", "a"}, {"r"}));
    g.nodes.push_back(node("Reshape_1", "Reshape", {"r", "b"}, {"y"}));
    add_output(g, "y");
    REQUIRE(infer_shapes(m).ok());
    auto before = run_model(m, feeds3());
    bool changed = apply_pass("redundant_node_elimination", m);
    CHECK(changed == !zero);
    if (!zero) {
      REQUIRE(apply_pass("dead_code_elimination", m));
      REQUIRE(m.graph.nodes.size() == 1);
      CHECK(m.graph.nodes[0].inputs[0] == "x");
    }
    require_close(run_model(m, feeds3()).at("y"), before.at("y"), 0, 0);
  }
}
