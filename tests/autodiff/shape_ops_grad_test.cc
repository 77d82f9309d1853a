// Finite-difference checks of the view/layout rules and the explicitly
// non-differentiable ops.
#include "autodiff/gradient_builder.h"
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("Reshape", {"Reshape with -1", [](Rng& r) {
  int64_t a = r.integer(1, 4), b = r.integer(1, 4);
  return NodeSpec{.op = "Reshape", .inputs = {r.uniform({a, b, 2}), make<int64_t>({2}, {-1, 2 * a})}};
}});
GRAD_CASE("Flatten", {"Flatten negative axis", [](Rng& r) {
  return NodeSpec{.op = "Flatten", .inputs = {r.uniform(r.shape(3, 4))}, .attributes = {Attribute::make_int("axis", -2)}};
}});
GRAD_CASE("Squeeze", {"Squeeze axis input", [](Rng& r) {
  int64_t a = r.integer(1, 4);
  return NodeSpec{.op = "Squeeze", .inputs = {r.uniform({a, 1, 3}), make<int64_t>({1}, {-2})}};
}});
GRAD_CASE("Unsqueeze", {"Unsqueeze opset 11 attribute", [](Rng& r) {
  return NodeSpec{.op = "Unsqueeze", .inputs = {r.uniform(r.shape(1, 3))},
                  .attributes = {Attribute::make_ints("axes", {0, -1})}, .opset = 11};
}});
GRAD_CASE("Transpose", {"Transpose random permutation", [](Rng& r) {
  Dims d = r.shape(2, 4);
  std::vector<int64_t> perm(d.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[static_cast<size_t>(r.integer(0, static_cast<int64_t>(i) - 1))]);
  return NodeSpec{.op = "Transpose", .inputs = {r.uniform(d)}, .attributes = {Attribute::make_ints("perm", perm)}};
}});
GRAD_CASE("Transpose", {"Transpose default reverses", [](Rng& r) {
  return NodeSpec{.op = "Transpose", .inputs = {r.uniform(r.shape(1, 4))}};
}});
GRAD_CASE("Concat", {"Concat three along a negative axis", [](Rng& r) {
  Dims d = r.shape(2, 3);
  int64_t axis = r.axis(static_cast<int64_t>(d.size()));
  size_t ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(d.size()) : axis);
  Dims d2 = d, d3 = d;
  d2[ax] = r.integer(1, 3);
  d3[ax] = r.integer(1, 3);
  return NodeSpec{.op = "Concat", .inputs = {r.uniform(d), r.uniform(d2), r.uniform(d3)},
                  .attributes = {Attribute::make_int("axis", axis)}};
}});
GRAD_CASE("Concat", {"Concat opset 11", [](Rng& r) {
  return NodeSpec{.op = "Concat", .inputs = {r.uniform({2, 3}), r.uniform({1, 3})},
                  .attributes = {Attribute::make_int("axis", 0)}, .opset = 11};
}});
GRAD_CASE("Split", {"Split with sizes, one output unused by the loss weights", [](Rng& r) {
  int64_t a = r.integer(1, 3);
  return NodeSpec{.op = "Split", .inputs = {r.uniform({a, 5}), make<int64_t>({2}, {2, 3})},
                  .attributes = {Attribute::make_int("axis", -1)}, .num_outputs = 2};
}});
GRAD_CASE("Expand", {"Expand to a larger rank", [](Rng& r) {
  int64_t a = r.integer(1, 4);
  return NodeSpec{.op = "Expand", .inputs = {r.uniform({a, 1}), make<int64_t>({3}, {2, a, 3})}};
}});

}  // namespace

TEST_CASE("gradcheck.shape_ops") {
  check_registered({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Expand"});
}

// Round/Floor/Ceil/Sign and Shape-like ops cut the path: an initializer that
// reaches the loss only through them has no gradient and is reported.
TEST_CASE("autodiff.zero_and_no_gradient_ops_cut_the_path") {
  for (const char* op : {"Round", "Shape"}) {
    INFO(op);
    NodeSpec s{.op = op, .inputs = {make<float>({2}, {0.4f, 1.6f})}};
    Model m = single_node_model(s);
    auto b = GraphBuilder::create(m, {});
    REQUIRE(b.ok());
    std::string out = "out0";
    if (std::string(op) == "Shape") {
      auto c = (*b)->add1("Cast", {out}, {Attribute::make_int("to", 1)});
      REQUIRE(c.ok());
      out = *c;
    }
    auto loss = (*b)->add1("ReduceSum", {out}, {Attribute::make_int("keepdims", 0)});
    REQUIRE(loss.ok());
    auto g = build_gradients(**b, *loss, {"in0"});
    INFO(g.status().message());
    REQUIRE(g.ok());
    CHECK(g->unreached == std::vector<std::string>{"in0"});
    CHECK(g->gradient.empty());
  }
}

}  // namespace ort_train::testing
