// shape_folding: Shape, and Gather or Slice of a Shape, become constants when
// the dims they return are known (Slice's INT64_MAX end included); a
// symbolic dim stays, and nothing folds in a graph whose shapes are bound for
// one build.
#include <limits>

#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// x: [batch, seq, 8]; s = Shape(x); last = Slice(s, -1, INT64_MAX); first = Gather(s, 0); mid = Gather(s, [2]).
Model shapes() {
  Model m = empty_model();
  Graph& g = m.graph;
  g.inputs.push_back({"x", DType::kFloat, Shape{Dim("batch"), Dim("seq"), Dim(8)}, ""});
  g.values["x"] = g.inputs.back();
  add_initializer(g, "minus_one", make<int64_t>({1}, {-1}));
  add_initializer(g, "to_end", make<int64_t>({1}, {std::numeric_limits<int64_t>::max()}));
  add_initializer(g, "zero", make<int64_t>({}, {0}));
  add_initializer(g, "two", make<int64_t>({1}, {2}));
  g.nodes.push_back(node("Shape", "Shape", {"x"}, {"s"}));
  g.nodes.push_back(node("Slice", "Slice", {"s", "minus_one", "to_end"}, {"last"}));
  g.nodes.push_back(node("Gather", "Gather", {"s", "zero"}, {"first"}));
  g.nodes.push_back(node("Gather_1", "Gather", {"s", "two"}, {"mid"}));
  g.nodes.push_back(node("Mul", "Mul", {"last", "mid"}, {"y"}));
  add_output(g, "y");
  add_output(g, "first");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

}  // namespace

TEST_CASE("shape_folding: known dims picked from a Shape become constants", "[passes]") {
  Model m = shapes();
  int64_t changed = 0;
  REQUIRE(apply_pass("shape_folding", m, {}, &changed));
  CHECK(changed == 2);  // the Slice and the Gather of dim 2; the Shape itself and dim 0 are symbolic
  REQUIRE(m.graph.initializers.count("last"));
  CHECK(m.graph.initializers.at("last").dims() == Dims{1});
  CHECK(m.graph.initializers.at("last").data<int64_t>()[0] == 8);
  REQUIRE(m.graph.initializers.count("mid"));
  CHECK(m.graph.initializers.at("mid").data<int64_t>()[0] == 8);
  CHECK_FALSE(m.graph.initializers.count("first"));
  CHECK(count_op(m, "Gather") == 1);
  CHECK(count_op(m, "Shape") == 1);
}

TEST_CASE("shape_folding: a fully known Shape folds, nothing folds when shapes are bound for a build", "[passes]") {
  Model m = empty_model();
  add_input(m.graph, "x", DType::kFloat, {2, 3});
  m.graph.nodes.push_back(node("Shape", "Shape", {"x"}, {"s"}));
  m.graph.nodes.push_back(node("Identity", "Identity", {"s"}, {"y"}));
  add_output(m.graph, "y");
  REQUIRE(infer_shapes(m).ok());
  Model bound = m;
  REQUIRE(apply_pass("shape_folding", m));
  CHECK(m.graph.initializers.at("s").dims() == Dims{2});

  auto pass = PassRegistry::instance().create("shape_folding");
  PassContext ctx;
  ctx.shapes_bound = true;
  auto r = pass->apply(bound, ctx);
  REQUIRE(r.ok());
  CHECK_FALSE(*r);
}
