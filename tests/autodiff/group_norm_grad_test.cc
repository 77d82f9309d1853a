// Finite-difference checks of InstanceNormalization and GroupNormalization
// (per-group affine at opsets 18-20, per-channel from 21) through GroupNormGrad.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("InstanceNormalization", {"InstanceNormalization [N, C, H, W]", [](Rng& r) {
  int64_t c = r.integer(1, 3);
  return NodeSpec{.op = "InstanceNormalization",
                  .inputs = {r.uniform({2, c, 3, 2}), r.uniform({c}, 0.5, 1.5), r.uniform({c})},
                  .attributes = {Attribute::make_float("epsilon", 1e-3f)}};
}});
GRAD_CASE("InstanceNormalization", {"InstanceNormalization [N, C, L]", [](Rng& r) {
  return NodeSpec{.op = "InstanceNormalization", .inputs = {r.uniform({3, 2, 4}), r.uniform({2}), r.uniform({2})}};
}});
GRAD_CASE("GroupNormalization", {"GroupNormalization opset 18 (scale per group)", [](Rng& r) {
  return NodeSpec{.op = "GroupNormalization", .inputs = {r.uniform({2, 6, 2, 2}), r.uniform({3}), r.uniform({3})},
                  .attributes = {Attribute::make_int("num_groups", 3)}, .opset = 18};
}});
GRAD_CASE("GroupNormalization", {"GroupNormalization opset 21 (scale per channel)", [](Rng& r) {
  return NodeSpec{.op = "GroupNormalization", .inputs = {r.uniform({2, 4, 3}), r.uniform({4}), r.uniform({4})},
                  .attributes = {Attribute::make_int("num_groups", 2)}, .opset = 21};
}});

}  // namespace

TEST_CASE("gradcheck.group_norm") { check_registered({"InstanceNormalization", "GroupNormalization"}); }

}  // namespace ort_train::testing
