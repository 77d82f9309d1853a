// Finite-difference checks of DepthToSpace (both modes) and SpaceToDepth.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

std::function<NodeSpec(Rng&)> depth_to_space(const char* mode) {
  return [=](Rng& r) {
    int64_t b = r.integer(1, 3);
    return NodeSpec{.op = "DepthToSpace", .inputs = {r.uniform({2, b * b * r.integer(1, 2), 2, 3})},
                    .attributes = {Attribute::make_int("blocksize", b), Attribute::make_string("mode", mode)}};
  };
}

GRAD_CASE("DepthToSpace", {"DepthToSpace DCR", depth_to_space("DCR")});
GRAD_CASE("DepthToSpace", {"DepthToSpace CRD", depth_to_space("CRD")});
GRAD_CASE("SpaceToDepth", {"SpaceToDepth", [](Rng& r) {
  int64_t b = r.integer(1, 3);
  return NodeSpec{.op = "SpaceToDepth", .inputs = {r.uniform({2, r.integer(1, 3), 2 * b, b})},
                  .attributes = {Attribute::make_int("blocksize", b)}};
}});

}  // namespace

TEST_CASE("gradcheck.depth_space") { check_registered({"DepthToSpace", "SpaceToDepth"}); }

}  // namespace ort_train::testing
