// Finite-difference checks of the unary and activation rules on random shapes,
// away from kinks (Relu, Abs, Clip, LeakyRelu at their breakpoints).
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

std::function<NodeSpec(Rng&)> unary(const char* op, double lo = -2, double hi = 2, std::vector<Attribute> attrs = {},
                                    int64_t opset = 17) {
  return [=](Rng& r) { return NodeSpec{.op = op, .inputs = {r.uniform(r.shape(0, 4), lo, hi)}, .attributes = attrs,
                                       .opset = opset}; };
}
std::function<NodeSpec(Rng&)> kinked(const char* op, double kink, std::vector<Attribute> attrs = {},
                                     int64_t opset = 17) {
  return [=](Rng& r) {
    return NodeSpec{.op = op, .inputs = {r.away_from(r.shape(0, 4), kink, 0.05, -2, 2)}, .attributes = attrs,
                    .opset = opset};
  };
}

GRAD_CASE("Identity", {"Identity", unary("Identity")});
GRAD_CASE("Neg", {"Neg", unary("Neg")});
GRAD_CASE("Abs", {"Abs away from 0", kinked("Abs", 0)});
GRAD_CASE("Exp", {"Exp", unary("Exp")});
GRAD_CASE("Log", {"Log", unary("Log", 0.3, 3)});
GRAD_CASE("Sqrt", {"Sqrt", unary("Sqrt", 0.3, 3)});
GRAD_CASE("Reciprocal", {"Reciprocal", unary("Reciprocal", 0.3, 3)});
GRAD_CASE("Sin", {"Sin", unary("Sin")});
GRAD_CASE("Cos", {"Cos", unary("Cos")});
GRAD_CASE("Atan", {"Atan", unary("Atan")});
GRAD_CASE("Erf", {"Erf", unary("Erf")});
GRAD_CASE("Softplus", {"Softplus", unary("Softplus", -30, 30)});
GRAD_CASE("Tanh", {"Tanh", unary("Tanh")});
GRAD_CASE("Sigmoid", {"Sigmoid", unary("Sigmoid")});
GRAD_CASE("Relu", {"Relu away from 0", kinked("Relu", 0)});
GRAD_CASE("LeakyRelu", {"LeakyRelu alpha 0.2", kinked("LeakyRelu", 0, {Attribute::make_float("alpha", 0.2f)})});
GRAD_CASE("Gelu", {"Gelu exact", unary("Gelu", -3, 3, {}, 20)});
GRAD_CASE("Gelu", {"Gelu tanh", unary("Gelu", -3, 3, {Attribute::make_string("approximate", "tanh")}, 20)});
// gelu_fusion's op: the same semantics in com.ort_train, at any opset.
GRAD_CASE("Gelu", {"Gelu (com.ort_train, fused) exact", [](Rng& r) {
  NodeSpec s = unary("Gelu", -3, 3, {}, 12)(r);
  s.domain = kOrtTrainDomain;
  return s;
}});
GRAD_CASE("Gelu", {"Gelu (com.ort_train, fused) tanh", [](Rng& r) {
  NodeSpec s = unary("Gelu", -3, 3, {Attribute::make_string("approximate", "tanh")}, 12)(r);
  s.domain = kOrtTrainDomain;
  return s;
}});
// bias_gelu_fusion's op: Gelu(X + B), B 1-D along X's last dim, both forms.
std::function<NodeSpec(Rng&)> bias_gelu(const char* approximate) {
  return [approximate](Rng& r) {
    int64_t n = r.integer(1, 5);
    NodeSpec s{.op = "BiasGelu", .inputs = {r.uniform({2, 3, n}, -3, 3), r.uniform({n}, -1, 1)},
               .attributes = {Attribute::make_string("approximate", approximate)}};
    s.domain = kOrtTrainDomain;
    return s;
  };
}
GRAD_CASE("BiasGelu", {"BiasGelu exact (com.ort_train)", bias_gelu("none")});
GRAD_CASE("BiasGelu", {"BiasGelu tanh (com.ort_train)", bias_gelu("tanh")});
GRAD_CASE("Silu", {"Silu (com.ort_train, fused)", [](Rng& r) {
  NodeSpec s = unary("Silu", -6, 6, {}, 12)(r);
  s.domain = kOrtTrainDomain;
  return s;
}});
GRAD_CASE("Cast", {"Cast double to float", [](Rng& r) {
  return NodeSpec{.op = "Cast", .inputs = {r.uniform(r.shape(1, 3))},
                  .attributes = {Attribute::make_int("to", static_cast<int64_t>(DType::kFloat))}};
}, {}, 1e-4, 1e-4, 1e-3});
GRAD_CASE("CastLike", {"CastLike to double", [](Rng& r) {
  return NodeSpec{.op = "CastLike", .inputs = {r.uniform(r.shape(1, 3)), make<double>({}, {0.0})}};
}});
GRAD_CASE("Clip", {"Clip with min and max inputs", [](Rng& r) {
  Dims d = r.shape(1, 3);
  Tensor x = Tensor::host(DType::kDouble, d);
  for (double& v : x.span<double>()) {
    do v = r.real(-2, 2);
    while (std::abs(v + 0.5) < 0.05 || std::abs(v - 0.7) < 0.05);
  }
  return NodeSpec{.op = "Clip", .inputs = {x, make<double>({}, {-0.5}), make<double>({}, {0.7})}};
}});
GRAD_CASE("Clip", {"Clip opset 10 attributes", [](Rng& r) {
  Dims d = r.shape(1, 3);
  Tensor x = Tensor::host(DType::kFloat, d);
  for (float& v : x.span<float>()) {
    do v = static_cast<float>(r.real(-2, 2));
    while (std::abs(v + 0.5f) < 0.05f || std::abs(v - 0.7f) < 0.05f);
  }
  return NodeSpec{.op = "Clip", .inputs = {x},
                  .attributes = {Attribute::make_float("min", -0.5f), Attribute::make_float("max", 0.7f)},
                  .opset = 10};
}, {}, 1e-2, 1e-3, 1e-2});

}  // namespace

TEST_CASE("gradcheck.elementwise_unary") {
  check_registered({"Identity", "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Sin", "Cos", "Atan", "Erf", "Tanh",
                    "Sigmoid", "Softplus", "Relu", "LeakyRelu", "Gelu", "BiasGelu", "Silu", "Cast", "CastLike", "Clip"});
}

}  // namespace ort_train::testing
