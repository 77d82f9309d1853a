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

// Cubic (A = -0.5 and the default -0.75, exclude_outside), antialias when
// downsampling (linear and cubic: wider, normalized windows), and
// tf_crop_and_resize with a roi that reaches past the input (those elements
// are extrapolation_value and read nothing).
GRAD_CASE("Resize", {"Resize cubic upsampling, exclude_outside", [](Rng& r) {
  return NodeSpec{.op = "Resize",
                  .inputs = {r.uniform({1, 1, 4, 3}), Tensor(), make<float>({4}, {1, 1, 1.5f, 2})},
                  .attributes = {Attribute::make_string("mode", "cubic"),
                                 Attribute::make_int("exclude_outside", r.integer(0, 1)),
                                 Attribute::make_float("cubic_coeff_a", r.integer(0, 1) ? -0.5f : -0.75f)}};
}, {0}});
GRAD_CASE("Resize", {"Resize antialias downsampling, linear and cubic", [](Rng& r) {
  return NodeSpec{.op = "Resize",
                  .inputs = {r.uniform({1, 2, 7, 6}), Tensor(), Tensor(), make<int64_t>({4}, {1, 2, 3, 4})},
                  .attributes = {Attribute::make_string("mode", r.integer(0, 1) ? "cubic" : "linear"),
                                 Attribute::make_int("antialias", 1)},
                  .opset = 18};
}, {0}});
GRAD_CASE("Resize", {"Resize tf_crop_and_resize with extrapolation", [](Rng& r) {
  return NodeSpec{.op = "Resize",
                  .inputs = {r.uniform({1, 1, 4, 5}), make<float>({8}, {0, 0, 0.1f, -0.2f, 1, 1, 0.8f, 0.9f}),
                             Tensor(), make<int64_t>({4}, {1, 1, 3, 4})},
                  .attributes = {Attribute::make_string("mode", r.integer(0, 1) ? "cubic" : "linear"),
                                 Attribute::make_string("coordinate_transformation_mode", "tf_crop_and_resize"),
                                 Attribute::make_float("extrapolation_value", 10.f)},
                  .opset = 13};
}, {0}});

}  // namespace

TEST_CASE("gradcheck.resize") { check_registered({"Resize"}); }

}  // namespace ort_train::testing
