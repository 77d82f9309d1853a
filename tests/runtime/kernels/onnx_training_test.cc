// ONNX's training operators at steps the conformance data leaves out (T > 0:
// Adam's bias correction, Momentum's beta), against the spec's formulas.
#include <cmath>

#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("onnx_training.adam_bias_correction_and_momentum_beta") {
  Tensor r = make<float>({}, {0.1f}), t = make<int64_t>({}, {2});
  Tensor x = make<float>({2}, {1.f, -2.f}), g = make<float>({2}, {0.5f, 0.25f});
  Tensor v = make<float>({2}, {0.1f, 0.2f}), h = make<float>({2}, {0.3f, 0.4f});
  NodeSpec adam{.op = "Adam", .inputs = {r, t, x, g, v, h},
                .attributes = {Attribute::make_float("alpha", 0.9f), Attribute::make_float("beta", 0.99f),
                               Attribute::make_float("epsilon", 1e-3f)},
                .num_outputs = 3, .opset = 1, .domain = "ai.onnx.preview.training"};
  auto out = run_node(adam);
  for (int i = 0; i < 2; ++i) {
    double gg = g.data<float>()[i], vv = 0.9 * v.data<float>()[i] + 0.1 * gg;
    double hh = 0.99 * h.data<float>()[i] + 0.01 * gg * gg;
    double rate = 0.1 * std::sqrt(1 - 0.99 * 0.99) / (1 - 0.9 * 0.9);
    CHECK(out[0].data<float>()[i] == Approx(x.data<float>()[i] - rate * vv / (std::sqrt(hh) + 1e-3)).epsilon(1e-5));
    CHECK(out[1].data<float>()[i] == Approx(vv).epsilon(1e-6));
    CHECK(out[2].data<float>()[i] == Approx(hh).epsilon(1e-6));
  }
  NodeSpec momentum{.op = "Momentum", .inputs = {r, t, x, g, v},
                    .attributes = {Attribute::make_float("alpha", 0.9f), Attribute::make_float("beta", 0.5f),
                                   Attribute::make_string("mode", "nesterov"),
                                   Attribute::make_float("norm_coefficient", 0.01f)},
                    .num_outputs = 2, .opset = 1, .domain = "ai.onnx.preview.training"};
  auto m = run_node(momentum);
  for (int i = 0; i < 2; ++i) {
    double gg = 0.01 * x.data<float>()[i] + g.data<float>()[i], vv = 0.9 * v.data<float>()[i] + 0.5 * gg;
    CHECK(m[1].data<float>()[i] == Approx(vv).epsilon(1e-6));
    CHECK(m[0].data<float>()[i] == Approx(x.data<float>()[i] - 0.1 * (gg + 0.9 * vv)).epsilon(1e-6));
  }
}

}  // namespace ort_train::testing
