// Finite-difference checks of the parameterised activations, the trigonometric
// and hyperbolic functions (ActivationGrad) and PRelu, on random shapes,
// with no point within 0.05 of a kink.
#include <cmath>

#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

// X uniform in [lo, hi) with no value within 0.05 of any of `kinks`.
std::function<NodeSpec(Rng&)> activation(const char* op, double lo, double hi, std::vector<double> kinks = {},
                                         std::vector<Attribute> attrs = {}, int64_t opset = 18) {
  return [=](Rng& r) {
    Tensor x = Tensor::host(DType::kDouble, r.shape(0, 4));
    for (double& v : x.span<double>()) {
      bool near;
      do {
        v = r.real(lo, hi);
        near = false;
        for (double k : kinks) near = near || std::abs(v - k) < 0.05;
      } while (near);
    }
    return NodeSpec{.op = op, .inputs = {x}, .attributes = attrs, .opset = opset};
  };
}

Attribute f(const char* name, float v) { return Attribute::make_float(name, v); }

GRAD_CASE("HardSigmoid", {"HardSigmoid defaults", activation("HardSigmoid", -4, 4, {-2.5, 2.5})});
GRAD_CASE("HardSigmoid", {"HardSigmoid alpha 0.5 beta 0.25",
                          activation("HardSigmoid", -3, 3, {-0.5, 1.5}, {f("alpha", 0.5f), f("beta", 0.25f)})});
GRAD_CASE("HardSwish", {"HardSwish", activation("HardSwish", -5, 5, {-3, 3})});
GRAD_CASE("Elu", {"Elu alpha 0.7", activation("Elu", -3, 3, {0}, {f("alpha", 0.7f)})});
GRAD_CASE("Selu", {"Selu defaults", activation("Selu", -3, 3, {0})});
GRAD_CASE("Celu", {"Celu alpha 1.5", activation("Celu", -3, 3, {0}, {f("alpha", 1.5f)})});
GRAD_CASE("ThresholdedRelu", {"ThresholdedRelu alpha 0.3",
                              activation("ThresholdedRelu", -2, 2, {0.3}, {f("alpha", 0.3f)})});
GRAD_CASE("Shrink", {"Shrink lambd 0.4 bias 0.2",
                     activation("Shrink", -2, 2, {-0.4, 0.4}, {f("lambd", 0.4f), f("bias", 0.2f)})});
GRAD_CASE("Softsign", {"Softsign", activation("Softsign", -3, 3, {0})});
GRAD_CASE("Mish", {"Mish", activation("Mish", -6, 6)});
GRAD_CASE("Tan", {"Tan", activation("Tan", -1.3, 1.3)});
GRAD_CASE("Sinh", {"Sinh", activation("Sinh", -3, 3)});
GRAD_CASE("Cosh", {"Cosh", activation("Cosh", -3, 3)});
GRAD_CASE("Asin", {"Asin", activation("Asin", -0.9, 0.9)});
GRAD_CASE("Acos", {"Acos", activation("Acos", -0.9, 0.9)});
GRAD_CASE("Asinh", {"Asinh", activation("Asinh", -3, 3)});
GRAD_CASE("Acosh", {"Acosh", activation("Acosh", 1.1, 4)});
GRAD_CASE("Atanh", {"Atanh", activation("Atanh", -0.9, 0.9)});

// PRelu: the slope per channel ([C, 1, 1] against [N, C, H, W]), or of X's shape.
GRAD_CASE("PRelu", {"PRelu per-channel slope", [](Rng& r) {
  int64_t c = r.integer(1, 4);
  return NodeSpec{.op = "PRelu", .inputs = {r.away_from({2, c, 3, 2}, 0, 0.05, -2, 2), r.uniform({c, 1, 1}, 0, 0.5)}};
}});
GRAD_CASE("PRelu", {"PRelu slope of X's shape", [](Rng& r) {
  Dims d = r.shape(1, 3);
  return NodeSpec{.op = "PRelu", .inputs = {r.away_from(d, 0, 0.05, -2, 2), r.uniform(d, -0.5, 0.5)}};
}});

}  // namespace

TEST_CASE("gradcheck.activations") {
  check_registered({"HardSigmoid", "HardSwish", "Elu", "Selu", "Celu", "ThresholdedRelu", "Shrink", "Softsign", "Mish",
                    "Tan", "Sinh", "Cosh", "Asin", "Acos", "Asinh", "Acosh", "Atanh", "PRelu"});
}

}  // namespace ort_train::testing
