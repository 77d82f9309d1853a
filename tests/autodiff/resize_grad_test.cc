// Finite-difference checks of Resize: linear with every coordinate mode,
// nearest with scales and with sizes, opset 10, and opset 18/19's forms (axes,
// keep_aspect_ratio_policy, half_pixel_symmetric).
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("Resize", {"Resize linear, every coordinate mode, scales", [](Rng& r) {
  const char* modes[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
  return NodeSpec{.op = "Resize",
                  .inputs = {r.uniform({1, 2, 3, 4}), Tensor(), make<float>({4}, {1, 1, 2, 1.5f})},
                  .attributes = {Attribute::make_string("mode", "linear"),
                                 Attribute::make_string("coordinate_transformation_mode", modes[r.integer(0, 3)])}};
}, {0}, 1e-5, 1e-6, 1e-6, 8});
GRAD_CASE("Resize", {"Resize linear downsampling with sizes", [](Rng& r) {
  return NodeSpec{.op = "Resize",
                  .inputs = {r.uniform({1, 1, 5, 6}), Tensor(), Tensor(), make<int64_t>({4}, {1, 1, 3, 4})},
                  .attributes = {Attribute::make_string("mode", "linear")}};
}, {0}});
GRAD_CASE("Resize", {"Resize nearest upsampling", [](Rng& r) {
  return NodeSpec{.op = "Resize", .inputs = {r.uniform({1, 2, 3, 2}), Tensor(), make<float>({4}, {1, 1, 2, 3})},
                  .attributes = {Attribute::make_string("mode", "nearest")}};
}, {0}});
GRAD_CASE("Resize", {"Resize opset 10 nearest", [](Rng& r) {
  return NodeSpec{.op = "Resize", .inputs = {r.uniform({1, 1, 2, 3}), make<float>({4}, {1, 1, 2, 2})}, .opset = 10};
}, {0}});

// Opset 18: sizes for the last two dims only, one scale for both (the
// smaller of 5/3 and 5/4); opset 19's half_pixel_symmetric on a scale that
// does not land on a whole size.
GRAD_CASE("Resize", {"Resize opset 18 axes and keep_aspect_ratio_policy not_larger", [](Rng& r) {
  return NodeSpec{.op = "Resize",
                  .inputs = {r.uniform({1, 2, 3, 4}), Tensor(), Tensor(), make<int64_t>({2}, {5, 5})},
                  .attributes = {Attribute::make_string("mode", "linear"), Attribute::make_ints("axes", {-2, -1}),
                                 Attribute::make_string("keep_aspect_ratio_policy", "not_larger")},
                  .opset = 18};
}, {0}});
GRAD_CASE("Resize", {"Resize opset 19 half_pixel_symmetric, a fractional scale on one axis", [](Rng& r) {
  return NodeSpec{.op = "Resize",
                  .inputs = {r.uniform({1, 2, 3, 5}), Tensor(), make<float>({1}, {1.7f})},
                  .attributes = {Attribute::make_string("mode", "linear"), Attribute::make_ints("axes", {3}),
                                 Attribute::make_string("coordinate_transformation_mode", "half_pixel_symmetric")},
                  .opset = 19};
}, {0}});

}  // namespace

TEST_CASE("gradcheck.resize") { check_registered({"Resize"}); }

}  // namespace ort_train::testing
