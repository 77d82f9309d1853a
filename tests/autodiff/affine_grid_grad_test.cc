// Finite-difference checks of AffineGrid, 2-D and 3-D, with and without
// align_corners (a dim of 1 included); the forward against ONNX's cases is
// tests/conformance/affine_grid.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("AffineGrid", {"AffineGrid 2-D", [](Rng& r) {
  return NodeSpec{.op = "AffineGrid",
                  .inputs = {r.uniform({2, 2, 3}), make<int64_t>({4}, {2, 3, 4, r.integer(1, 3)})},
                  .attributes = {Attribute::make_int("align_corners", r.integer(0, 1))},
                  .opset = 20};
}, {0}});
GRAD_CASE("AffineGrid", {"AffineGrid 3-D", [](Rng& r) {
  return NodeSpec{.op = "AffineGrid",
                  .inputs = {r.uniform({1, 3, 4}), make<int64_t>({5}, {1, 2, 2, 3, 2})},
                  .attributes = {Attribute::make_int("align_corners", r.integer(0, 1))},
                  .opset = 20};
}, {0}});

}  // namespace

TEST_CASE("gradcheck.affine_grid") { check_registered({"AffineGrid"}); }

}  // namespace ort_train::testing
