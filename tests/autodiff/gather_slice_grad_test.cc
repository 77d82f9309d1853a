// Finite-difference checks of Gather (repeated and negative indices, any axis)
// and Slice (negative steps, clamped bounds, attribute form).
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("Gather", {"Gather embedding rows with repeats", [](Rng& r) {
  int64_t vocab = r.integer(2, 5);
  return NodeSpec{.op = "Gather", .inputs = {r.uniform({vocab, 3}), r.indices({2, 3}, -vocab, vocab - 1)}};
}});
GRAD_CASE("Gather", {"Gather along a negative axis", [](Rng& r) {
  return NodeSpec{.op = "Gather", .inputs = {r.uniform({2, 4, 3}), r.indices({5}, -4, 3)},
                  .attributes = {Attribute::make_int("axis", -2)}};
}});
GRAD_CASE("Gather", {"Gather scalar index", [](Rng& r) {
  return NodeSpec{.op = "Gather", .inputs = {r.uniform({3, 2}), make<int64_t>({}, {r.integer(0, 2)})},
                  .attributes = {Attribute::make_int("axis", 0)}};
}});
GRAD_CASE("Slice", {"Slice steps and clamped ends", [](Rng& r) {
  return NodeSpec{.op = "Slice",
                  .inputs = {r.uniform({5, 6}), make<int64_t>({2}, {1, -1}), make<int64_t>({2}, {100, -7}),
                             make<int64_t>({2}, {0, 1}), make<int64_t>({2}, {2, -2})}};
}});
GRAD_CASE("Slice", {"Slice opset 1 attributes", [](Rng& r) {
  return NodeSpec{.op = "Slice", .inputs = {r.uniform({4, 3})},
                  .attributes = {Attribute::make_ints("starts", {1}), Attribute::make_ints("ends", {3}),
                                 Attribute::make_ints("axes", {0})},
                  .opset = 9};
}});

}  // namespace

TEST_CASE("gradcheck.gather_slice") { check_registered({"Gather", "Slice"}); }

}  // namespace ort_train::testing
