// The two passes the step-graph builder runs (training/step_graph.h):
// state_outputs makes an op's declared state outputs graph outputs, and
// weight_cast_hoisting turns a pinned float32 weight's Cast to 16 bits into
// an initializer holding the rounded copy, recorded in the model's metadata.
#include "graph/passes/pass_test_util.h"
#include "graph/passes/state_outputs.h"
#include "graph/passes/weight_cast_hoisting.h"
#include "graph/shape_inference.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// BatchNormalization in training mode over x [2, 3]: outputs y, the next
// running mean and variance. `stats_are_initializers`: mean and var are
// initializers (else graph inputs, which have nothing to store back into).
Model batch_norm_model(bool stats_are_initializers) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 3});
  add_initializer(g, "scale", make<float>({3}, {1, 1, 1}));
  add_initializer(g, "bias", make<float>({3}, {0, 0, 0}));
  if (stats_are_initializers) {
    add_initializer(g, "mean", make<float>({3}, {0, 0, 0}));
    add_initializer(g, "var", make<float>({3}, {1, 1, 1}));
  } else {
    add_input(g, "mean", DType::kFloat, {3});
    add_input(g, "var", DType::kFloat, {3});
  }
  g.nodes.push_back(node("bn", "BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                         {"y", "next_mean", "next_var"}, {Attribute::make_int("training_mode", 1)}));
  add_output(g, "y");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

// W [2, 3] cast to `to` and back to float32 (the GEMM between is beside the point).
Model cast_model(DType to, bool cast_is_output = false) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_initializer(g, "W", make<float>({2, 3}, {1.f, 1.00390625f, -3.14159f, 65504.f, 1e-8f, 0.1f}));
  g.nodes.push_back(node("cast_w", "Cast", {"W"}, {"W_low"}, {Attribute::make_int("to", static_cast<int64_t>(to))}));
  g.nodes.push_back(node("back", "Cast", {"W_low"}, {"y"}, {Attribute::make_int("to", 1)}));
  add_output(g, "y");
  if (cast_is_output) add_output(g, "W_low");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

}  // namespace

TEST_CASE("state_outputs: declared state outputs of initializers become graph outputs, once", "[passes]") {
  Model m = batch_norm_model(true);
  int64_t changed = 0;
  REQUIRE(apply_pass("state_outputs", m, {}, &changed));
  CHECK(changed == 2);
  REQUIRE(m.graph.outputs.size() == 3);
  CHECK(m.graph.outputs[1].name == "next_mean");
  CHECK(m.graph.outputs[2].name == "next_var");
  CHECK(m.graph.outputs[1].dtype == DType::kFloat);  // typed from the value info
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(state_writebacks(m.graph) == Pairs{{"next_mean", "mean"}, {"next_var", "var"}});
  REQUIRE_FALSE(apply_pass("state_outputs", m));
  CHECK(m.graph.outputs.size() == 3);

  // Statistics fed as inputs: nothing to write back, nothing added.
  Model fed = batch_norm_model(false);
  REQUIRE_FALSE(apply_pass("state_outputs", fed));
  CHECK(fed.graph.outputs.size() == 1);
  CHECK(state_writebacks(fed.graph).empty());
}

TEST_CASE("weight_cast_hoisting: a pinned weight's Cast to 16 bits becomes its rounded copy", "[passes]") {
  for (DType to : {DType::kBFloat16, DType::kFloat16}) {
    INFO(dtype_name(to));
    Model m = cast_model(to);
    const auto before = run_model(m);
    int64_t changed = 0;
    REQUIRE(apply_pass("weight_cast_hoisting", m, {"W"}, &changed));
    CHECK(changed == 1);
    CHECK(count_op(m, "Cast") == 1);  // the Cast back stays
    REQUIRE(m.graph.is_initializer("W_low"));
    CHECK(m.graph.initializers.at("W_low").dtype() == to);
    const auto copies = hoisted_weight_copies(m);
    REQUIRE(copies.size() == 1);
    CHECK(copies[0].weight == "W");
    CHECK(copies[0].copy == "W_low");
    // The copy holds what the Cast computed, bit for bit.
    require_close(run_model(m).at("y"), before.at("y"), 0, 0);
    REQUIRE_FALSE(apply_pass("weight_cast_hoisting", m, {"W"}));
    CHECK(hoisted_weight_copies(m).size() == 1);
  }
  // Not a trainable weight, not a 16-bit Cast, or a Cast the graph returns: left as it is.
  Model unpinned = cast_model(DType::kBFloat16);
  CHECK_FALSE(apply_pass("weight_cast_hoisting", unpinned, {}));
  Model wide = cast_model(DType::kDouble);
  CHECK_FALSE(apply_pass("weight_cast_hoisting", wide, {"W"}));
  Model returned = cast_model(DType::kFloat16, true);
  CHECK_FALSE(apply_pass("weight_cast_hoisting", returned, {"W"}));
  CHECK(hoisted_weight_copies(returned).empty());
}
