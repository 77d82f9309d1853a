// Finite-difference checks of Einsum: matmul, batched with '...', a label
// summed out of one operand only, implicit output, three operands.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

NodeSpec einsum(const char* eq, std::vector<Tensor> in) {
  return NodeSpec{.op = "Einsum", .inputs = std::move(in), .attributes = {Attribute::make_string("equation", eq)}};
}

GRAD_CASE("Einsum", {"Einsum matmul", [](Rng& r) { return einsum("ij,jk->ik", {r.uniform({2, 3}), r.uniform({3, 4})}); }});
GRAD_CASE("Einsum", {"Einsum batched with ellipsis broadcast", [](Rng& r) {
  return einsum("...ij,...jk->...ik", {r.uniform({2, 1, 2, 3}), r.uniform({3, 3, 2})});
}});
GRAD_CASE("Einsum", {"Einsum label summed out of one operand", [](Rng& r) {
  return einsum("ij,k->ik", {r.uniform({2, 3}), r.uniform({4})});
}});
GRAD_CASE("Einsum", {"Einsum implicit output", [](Rng& r) { return einsum("ij,jk", {r.uniform({2, 3}), r.uniform({3, 2})}); }});
GRAD_CASE("Einsum", {"Einsum three operands to a scalar", [](Rng& r) {
  return einsum("i,ij,j->", {r.uniform({3}), r.uniform({3, 2}), r.uniform({2})});
}});

}  // namespace

TEST_CASE("gradcheck.einsum") { check_registered({"Einsum"}); }

}  // namespace ort_train::testing
