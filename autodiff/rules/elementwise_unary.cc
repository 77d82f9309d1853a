// Gradient rules of the elementwise unary ops and activations. Derivatives that
// are products of dY with something the forward already has use standard ops;
// the common activations use one fused com.ort_train op each (activation_grad).
#include <cmath>

#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Attribute to_attr(DType t) { return Attribute::make_int("to", static_cast<int64_t>(t)); }

// dX = dY * f where f is built from the node's input and output.
using Factor = std::function<Result<std::string>(GradientContext&)>;
std::function<Status(GradientContext&)> times(Factor f) {
  return [f](GradientContext& c) -> Status {
    ASSIGN_OR_RETURN(auto factor, f(c));
    ASSIGN_OR_RETURN(auto g, c.add1("Mul", {c.GO(0), factor}));
    c.set_GI(0, g);
    return Status::Ok();
  };
}

// dX = op(dY, second) in the project's domain.
std::function<Status(GradientContext&)> fused(const char* op, bool uses_output) {
  return [op, uses_output](GradientContext& c) -> Status {
    std::vector<Attribute> attrs = c.node().attributes;
    ASSIGN_OR_RETURN(auto g, c.add1(op, {c.GO(0), uses_output ? c.O(0) : c.I(0)}, attrs, kOrtTrainDomain));
    c.set_GI(0, g);
    return Status::Ok();
  };
}

// BiasGelu(X, B) = Gelu(X + B): one BiasGeluGrad gives the gradient of the
// sum, X's and (summed by the driver over the rows) B's.
Status bias_gelu_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto g, c.add1("BiasGeluGrad", {c.GO(0), c.I(0), c.I(1)}, c.node().attributes, kOrtTrainDomain));
  for (size_t i = 0; i < 2; ++i)
    if (c.needs_GI(i)) c.set_GI(i, g);
  return Status::Ok();
}

std::string scalar(GradientContext& c, double v) { return c.builder().scalar(v, c.dtype(c.I(0))); }

Status identity_rule(GradientContext& c) {
  c.set_GI(0, c.GO(0));
  return Status::Ok();
}

Status neg_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto g, c.add1("Neg", {c.GO(0)}));
  c.set_GI(0, g);
  return Status::Ok();
}

// Cast between float types: cast the gradient back to the input's type.
Status cast_rule(GradientContext& c) {
  DType in = c.dtype(c.I(0));
  if (c.dtype(c.GO(0)) == in) return identity_rule(c);
  ASSIGN_OR_RETURN(auto g, c.add1("Cast", {c.GO(0)}, {to_attr(in)}));
  c.set_GI(0, g);
  return Status::Ok();
}

// Clip passes the gradient where min <= x <= max (PyTorch's clamp does the same).
Status clip_rule(GradientContext& c) {
  std::string lo, hi;
  if (c.opset() < 11) {
    if (const Attribute* a = c.node().attr("min")) lo = scalar(c, a->f);
    if (const Attribute* a = c.node().attr("max")) hi = scalar(c, a->f);
  } else {
    if (c.has_input(1)) lo = c.I(1);
    if (c.has_input(2)) hi = c.I(2);
  }
  // Not(Less) rather than GreaterOrEqual, which only exists from opset 12.
  std::string cond;
  if (!lo.empty()) {
    ASSIGN_OR_RETURN(auto below, c.add1("Less", {c.I(0), lo}));
    ASSIGN_OR_RETURN(cond, c.add1("Not", {below}));
  }
  if (!hi.empty()) {
    ASSIGN_OR_RETURN(auto above, c.add1("Greater", {c.I(0), hi}));
    ASSIGN_OR_RETURN(auto le, c.add1("Not", {above}));
    if (cond.empty()) {
      cond = le;
    } else {
      ASSIGN_OR_RETURN(cond, c.add1("And", {cond, le}));
    }
  }
  if (cond.empty()) return identity_rule(c);
  ASSIGN_OR_RETURN(auto g, c.add1("Where", {cond, c.GO(0), scalar(c, 0.0)}));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Identity").rule(identity_rule);
ORT_GRADIENT("Neg").rule(neg_rule);
ORT_GRADIENT("Cast").rule(cast_rule);
ORT_GRADIENT("CastLike").no_gradient_for({1}).rule(cast_rule);
ORT_GRADIENT("Clip").no_gradient_for({1, 2}).rule(clip_rule);
// |x|' = sign(x) (0 at 0, as PyTorch).
ORT_GRADIENT("Abs").rule(times([](GradientContext& c) { return c.add1("Sign", {c.I(0)}); }));
ORT_GRADIENT("Exp").rule(times([](GradientContext& c) -> Result<std::string> { return c.O(0); }));
ORT_GRADIENT("Log").rule([](GradientContext& c) -> Status {
  ASSIGN_OR_RETURN(auto g, c.add1("Div", {c.GO(0), c.I(0)}));
  c.set_GI(0, g);
  return Status::Ok();
});
// sqrt(x)' = 1 / (2 sqrt(x)).
ORT_GRADIENT("Sqrt").rule([](GradientContext& c) -> Status {
  ASSIGN_OR_RETURN(auto two_y, c.add1("Mul", {c.O(0), scalar(c, 2.0)}));
  ASSIGN_OR_RETURN(auto g, c.add1("Div", {c.GO(0), two_y}));
  c.set_GI(0, g);
  return Status::Ok();
});
// (1/x)' = -1/x^2 = -y^2.
ORT_GRADIENT("Reciprocal").rule(times([](GradientContext& c) -> Result<std::string> {
  ASSIGN_OR_RETURN(auto y2, c.add1("Mul", {c.O(0), c.O(0)}));
  return c.add1("Neg", {y2});
}));
ORT_GRADIENT("Sin").rule(times([](GradientContext& c) { return c.add1("Cos", {c.I(0)}); }));
ORT_GRADIENT("Cos").rule(times([](GradientContext& c) -> Result<std::string> {
  ASSIGN_OR_RETURN(auto s, c.add1("Sin", {c.I(0)}));
  return c.add1("Neg", {s});
}));
// atan(x)' = 1 / (1 + x^2).
ORT_GRADIENT("Atan").rule([](GradientContext& c) -> Status {
  ASSIGN_OR_RETURN(auto x2, c.add1("Mul", {c.I(0), c.I(0)}));
  ASSIGN_OR_RETURN(auto d, c.add1("Add", {x2, scalar(c, 1.0)}));
  ASSIGN_OR_RETURN(auto g, c.add1("Div", {c.GO(0), d}));
  c.set_GI(0, g);
  return Status::Ok();
});
// erf(x)' = 2/sqrt(pi) * exp(-x^2).
ORT_GRADIENT("Erf").rule(times([](GradientContext& c) -> Result<std::string> {
  ASSIGN_OR_RETURN(auto x2, c.add1("Mul", {c.I(0), c.I(0)}));
  ASSIGN_OR_RETURN(auto n, c.add1("Neg", {x2}));
  ASSIGN_OR_RETURN(auto e, c.add1("Exp", {n}));
  return c.add1("Mul", {e, scalar(c, 2.0 / std::sqrt(M_PI))});
}));
// softplus'(x) = sigmoid(x), smooth everywhere.
ORT_GRADIENT("Softplus").rule(times([](GradientContext& c) { return c.add1("Sigmoid", {c.I(0)}); }));
ORT_GRADIENT("Relu").rule(fused("ReluGrad", true));
ORT_GRADIENT("Sigmoid").rule(fused("SigmoidGrad", true));
ORT_GRADIENT("Tanh").rule(fused("TanhGrad", true));
ORT_GRADIENT("Gelu").rule(fused("GeluGrad", false));
ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "Gelu").rule(fused("GeluGrad", false));  // gelu_fusion's
ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "BiasGelu").rule(bias_gelu_rule);  // bias_gelu_fusion's
ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "Silu").rule(fused("SiluGrad", false));  // silu_fusion's
ORT_GRADIENT("LeakyRelu").rule(fused("LeakyReluGrad", false));

// Piecewise constant: the derivative is 0 wherever it exists.
ORT_GRADIENT("Floor").zero();
ORT_GRADIENT("Ceil").zero();
ORT_GRADIENT("Round").zero();
ORT_GRADIENT("Sign").zero();

}  // namespace ort_train
