// Finite-difference checks of Conv (groups, strides, dilations, pads, 1-D and
// 3-D) and the pooling ops (ceil_mode, count_include_pad, global pools).
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("Conv", {"Conv 2-D strides, pads, dilations, bias", [](Rng& r) {
  int64_t n = r.integer(1, 2), c = r.integer(1, 3), m = r.integer(1, 3);
  return NodeSpec{.op = "Conv", .inputs = {r.uniform({n, c, 6, 5}), r.uniform({m, c, 3, 2}), r.uniform({m})},
                  .attributes = {Attribute::make_ints("strides", {2, 1}), Attribute::make_ints("pads", {1, 0, 1, 1}),
                                 Attribute::make_ints("dilations", {1, 2})}};
}});
GRAD_CASE("Conv", {"Conv grouped and depthwise", [](Rng& r) {
  int64_t g = r.integer(1, 2) * 2;  // 2 or 4 groups
  return NodeSpec{.op = "Conv", .inputs = {r.uniform({1, 4, 5, 5}), r.uniform({g, 4 / (g == 4 ? 4 : 2), 3, 3})},
                  .attributes = {Attribute::make_int("group", g == 4 ? 4 : 2)}};
}});
// Several images of few positions sit side by side in one GEMM (runtime/cpu/im2col.h).
GRAD_CASE("Conv", {"Conv grouped, strided, three images side by side", [](Rng& r) {
  return NodeSpec{.op = "Conv", .inputs = {r.uniform({3, 4, 4, 3}), r.uniform({6, 2, 3, 3}), r.uniform({6})},
                  .attributes = {Attribute::make_int("group", 2), Attribute::make_ints("strides", {2, 1}),
                                 Attribute::make_ints("pads", {1, 1, 1, 1})}};
}});
// Taps whose every position lies in the padding are left out of the GEMMs
// (runtime/cpu/im2col.h): their filter gradient must still be zero and the rest right.
GRAD_CASE("Conv", {"Conv window reaching wholly into the padding (a 1-high image, a strided 2x2 one)", [](Rng& r) {
  const bool strided = r.integer(0, 1) == 1;
  if (strided)
    return NodeSpec{.op = "Conv", .inputs = {r.uniform({2, 2, 2, 2}), r.uniform({3, 2, 3, 3}), r.uniform({3})},
                    .attributes = {Attribute::make_ints("strides", {2, 2}), Attribute::make_ints("pads", {1, 1, 1, 1})}};
  return NodeSpec{.op = "Conv", .inputs = {r.uniform({3, 3, 1, 2}), r.uniform({4, 3, 3, 3})},
                  .attributes = {Attribute::make_ints("pads", {1, 1, 1, 1})}};
}});
GRAD_CASE("Conv", {"Conv 1-D auto_pad SAME_UPPER", [](Rng& r) {
  return NodeSpec{.op = "Conv", .inputs = {r.uniform({2, 2, 7}), r.uniform({3, 2, 4}), r.uniform({3})},
                  .attributes = {Attribute::make_string("auto_pad", "SAME_UPPER"), Attribute::make_ints("strides", {2})}};
}});
GRAD_CASE("Conv", {"Conv 3-D", [](Rng& r) {
  return NodeSpec{.op = "Conv", .inputs = {r.uniform({1, 2, 3, 4, 3}), r.uniform({2, 2, 2, 2, 2})}};
}});
GRAD_CASE("MaxPool", {"MaxPool 2-D pads and ceil_mode", [](Rng& r) {
  return NodeSpec{.op = "MaxPool", .inputs = {r.distinct({2, 2, 5, 6})},
                  .attributes = {Attribute::make_ints("kernel_shape", {3, 2}), Attribute::make_ints("strides", {2, 2}),
                                 Attribute::make_ints("pads", {1, 0, 1, 0}), Attribute::make_int("ceil_mode", 1)}};
}});
GRAD_CASE("MaxPool", {"MaxPool 1-D overlapping windows", [](Rng& r) {
  return NodeSpec{.op = "MaxPool", .inputs = {r.distinct({1, 3, 7})},
                  .attributes = {Attribute::make_ints("kernel_shape", {3}), Attribute::make_ints("strides", {1})}};
}});
GRAD_CASE("AveragePool", {"AveragePool count_include_pad both ways", [](Rng& r) {
  return NodeSpec{.op = "AveragePool", .inputs = {r.uniform({2, 2, 5, 5})},
                  .attributes = {Attribute::make_ints("kernel_shape", {3, 3}), Attribute::make_ints("strides", {2, 2}),
                                 Attribute::make_ints("pads", {1, 1, 1, 1}),
                                 Attribute::make_int("count_include_pad", r.integer(0, 1)),
                                 Attribute::make_int("ceil_mode", r.integer(0, 1))}};
}, {}, 1e-5, 1e-6, 1e-6, 4});
GRAD_CASE("GlobalAveragePool", {"GlobalAveragePool", [](Rng& r) {
  return NodeSpec{.op = "GlobalAveragePool", .inputs = {r.uniform({2, 3, 3, 2})}};
}});
GRAD_CASE("GlobalMaxPool", {"GlobalMaxPool", [](Rng& r) {
  return NodeSpec{.op = "GlobalMaxPool", .inputs = {r.distinct({2, 3, 3, 2})}};
}});
// p = 1 and 3 have |x| in them: values kept away from 0, where it kinks.
GRAD_CASE("LpPool", {"LpPool p 1-3, strides and pads", [](Rng& r) {
  return NodeSpec{.op = "LpPool", .inputs = {r.away_from({2, 2, 5, 4}, 0.0, 0.1)},
                  .attributes = {Attribute::make_ints("kernel_shape", {3, 2}), Attribute::make_ints("strides", {2, 1}),
                                 Attribute::make_ints("pads", {1, 0, 1, 1}), Attribute::make_int("p", r.integer(1, 3))}};
}});
GRAD_CASE("LpPool", {"LpPool opset 18 dilations, ceil_mode, 1-D", [](Rng& r) {
  return NodeSpec{.op = "LpPool", .inputs = {r.away_from({1, 3, 9}, 0.0, 0.1)},
                  .attributes = {Attribute::make_ints("kernel_shape", {3}), Attribute::make_ints("strides", {2}),
                                 Attribute::make_ints("dilations", {2}), Attribute::make_int("ceil_mode", 1),
                                 Attribute::make_int("p", 2)},
                  .opset = 18};
}});
GRAD_CASE("GlobalLpPool", {"GlobalLpPool p 1-3", [](Rng& r) {
  return NodeSpec{.op = "GlobalLpPool", .inputs = {r.away_from({2, 3, 3, 2}, 0.0, 0.1)},
                  .attributes = {Attribute::make_int("p", r.integer(1, 3))}};
}});

}  // namespace

TEST_CASE("gradcheck.conv_pool") {
  check_registered({"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool"});
}

}  // namespace ort_train::testing

namespace ort_train::testing {
namespace {

GRAD_CASE("ConvTranspose", {"ConvTranspose strides, pads, output_padding, bias", [](Rng& r) {
  int64_t n = r.integer(1, 2);
  return NodeSpec{.op = "ConvTranspose", .inputs = {r.uniform({n, 2, 3, 4}), r.uniform({2, 3, 3, 2}), r.uniform({3})},
                  .attributes = {Attribute::make_ints("strides", {2, 1}), Attribute::make_ints("pads", {1, 0, 0, 1}),
                                 Attribute::make_ints("output_padding", {1, 0})}};
}});
GRAD_CASE("ConvTranspose", {"ConvTranspose grouped, dilated, output_shape", [](Rng& r) {
  return NodeSpec{.op = "ConvTranspose", .inputs = {r.uniform({1, 4, 3}), r.uniform({4, 1, 2})},
                  .attributes = {Attribute::make_int("group", 2), Attribute::make_ints("dilations", {2}),
                                 Attribute::make_ints("strides", {2}), Attribute::make_ints("output_shape", {7})}};
}});

}  // namespace

TEST_CASE("gradcheck.conv_transpose") { check_registered({"ConvTranspose"}); }

}  // namespace ort_train::testing
