// Finite-difference checks of Col2Im: 2-D with overlapping blocks, strides,
// dilations and pads, and a 3-D (5-D image) case; the forward against ONNX's
// cases is tests/conformance/col2im_opset18.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("Col2Im", {"Col2Im 2-D, overlapping blocks", [](Rng& r) {
  // image 4x5, block 2x3, stride 1: 3x3 positions.
  return NodeSpec{.op = "Col2Im",
                  .inputs = {r.uniform({2, 2 * 6, 9}), make<int64_t>({2}, {4, 5}), make<int64_t>({2}, {2, 3})},
                  .opset = 18};
}, {0}});
GRAD_CASE("Col2Im", {"Col2Im 2-D, strides, dilations and uneven pads", [](Rng& r) {
  // image 5x4, block 2x2, dilations 2x1, strides 2x1, pads (1, 0, 0, 1):
  // rows (5 + 1 - 3) / 2 + 1 = 2, cols (4 + 1 - 2) / 1 + 1 = 4.
  return NodeSpec{.op = "Col2Im",
                  .inputs = {r.uniform({1, 3 * 4, 8}), make<int64_t>({2}, {5, 4}), make<int64_t>({2}, {2, 2})},
                  .attributes = {Attribute::make_ints("dilations", {2, 1}), Attribute::make_ints("strides", {2, 1}),
                                 Attribute::make_ints("pads", {1, 0, 0, 1})},
                  .opset = 18};
}, {0}});
GRAD_CASE("Col2Im", {"Col2Im 3-D", [](Rng& r) {
  // image 3x3x2, block 2x2x1: 2x2x2 positions.
  return NodeSpec{.op = "Col2Im",
                  .inputs = {r.uniform({1, 2 * 4, 8}), make<int64_t>({3}, {3, 3, 2}), make<int64_t>({3}, {2, 2, 1})},
                  .opset = 21};
}, {0}});

}  // namespace

TEST_CASE("gradcheck.col2im") { check_registered({"Col2Im"}); }

}  // namespace ort_train::testing
