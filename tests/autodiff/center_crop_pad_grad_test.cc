// Finite-difference checks of CenterCropPad: cropping and padding by odd and
// even amounts, on named axes and on all; the forward against ONNX's cases is
// tests/conformance/center_crop_pad.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("CenterCropPad", {"CenterCropPad crop and pad on named axes", [](Rng& r) {
  return NodeSpec{.op = "CenterCropPad",
                  .inputs = {r.uniform({2, 5, 4}), make<int64_t>({2}, {r.integer(1, 7), r.integer(1, 7)})},
                  .attributes = {Attribute::make_ints("axes", {-2, 2})},
                  .opset = 18};
}, {0}});
GRAD_CASE("CenterCropPad", {"CenterCropPad every axis", [](Rng& r) {
  return NodeSpec{.op = "CenterCropPad",
                  .inputs = {r.uniform({3, 4}), make<int64_t>({2}, {r.integer(1, 6), 3})},
                  .opset = 18};
}, {0}});

}  // namespace

TEST_CASE("gradcheck.center_crop_pad") { check_registered({"CenterCropPad"}); }

}  // namespace ort_train::testing
