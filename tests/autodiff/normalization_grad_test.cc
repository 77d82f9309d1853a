// Finite-difference checks of LayerNormalization (random axis, broadcast scale),
// RMSNorm (com.ort_train SimplifiedLayerNormalization)
// and BatchNormalization (training mode through batch statistics, inference mode).
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("LayerNormalization", {"LayerNormalization random axis", [](Rng& r) {
  Dims d = r.shape(2, 4);
  int64_t axis = r.integer(1, static_cast<int64_t>(d.size()) - 1);
  Dims norm(d.begin() + axis, d.end());
  if (r.integer(0, 1)) axis -= static_cast<int64_t>(d.size());
  return NodeSpec{.op = "LayerNormalization", .inputs = {r.uniform(d), r.uniform(norm, 0.5, 1.5), r.uniform(norm)},
                  .attributes = {Attribute::make_int("axis", axis), Attribute::make_float("epsilon", 1e-3f)}};
}});
GRAD_CASE("LayerNormalization", {"LayerNormalization without bias", [](Rng& r) {
  return NodeSpec{.op = "LayerNormalization", .inputs = {r.uniform({3, 5}), r.uniform({5}, 0.5, 1.5)}};
}});
// layer_norm_fusion's op: the same semantics in com.ort_train, at any opset.
GRAD_CASE("LayerNormalization", {"LayerNormalization (com.ort_train, fused) last axes", [](Rng& r) {
  Dims d = r.shape(2, 3);
  Dims norm(d.begin() + 1, d.end());
  return NodeSpec{.op = "LayerNormalization", .inputs = {r.uniform(d), r.uniform(norm, 0.5, 1.5), r.uniform(norm)},
                  .attributes = {Attribute::make_int("axis", 1), Attribute::make_float("epsilon", 1e-3f)},
                  .opset = 12, .domain = kOrtTrainDomain};
}});
// rms_norm_fusion's op: RMSNorm over the last axes (both gradients, and the
// InvStdDev output the gradient reuses).
GRAD_CASE("SimplifiedLayerNormalization", {"SimplifiedLayerNormalization (com.ort_train, fused) last axes", [](Rng& r) {
  Dims d = r.shape(2, 4);
  int64_t axis = r.integer(1, static_cast<int64_t>(d.size()) - 1);
  Dims norm(d.begin() + axis, d.end());
  return NodeSpec{.op = "SimplifiedLayerNormalization", .inputs = {r.uniform(d, -2, 2), r.uniform(norm, 0.5, 1.5)},
                  .attributes = {Attribute::make_int("axis", axis - static_cast<int64_t>(d.size())),
                                 Attribute::make_float("epsilon", 1e-3f)},
                  .opset = 12, .domain = kOrtTrainDomain};
}});
GRAD_CASE("BatchNormalization", {"BatchNormalization training mode", [](Rng& r) {
  int64_t n = r.integer(2, 3), c = r.integer(1, 3);
  return NodeSpec{.op = "BatchNormalization",
                  .inputs = {r.uniform({n, c, 2, 3}), r.uniform({c}, 0.5, 1.5), r.uniform({c}), r.uniform({c}),
                             r.uniform({c}, 0.5, 1.5)},
                  .attributes = {Attribute::make_int("training_mode", 1), Attribute::make_float("epsilon", 1e-3f)},
                  .num_outputs = 3, .opset = 15};
}});
GRAD_CASE("BatchNormalization", {"BatchNormalization inference (opset 9)", [](Rng& r) {
  int64_t n = r.integer(1, 3), c = r.integer(1, 3);
  return NodeSpec{.op = "BatchNormalization",
                  .inputs = {r.uniform({n, c, 3}), r.uniform({c}, 0.5, 1.5), r.uniform({c}), r.uniform({c}),
                             r.uniform({c}, 0.5, 1.5)},
                  .opset = 9};
}});

}  // namespace

TEST_CASE("gradcheck.normalization") { check_registered({"LayerNormalization", "SimplifiedLayerNormalization", "BatchNormalization"}); }

}  // namespace ort_train::testing
