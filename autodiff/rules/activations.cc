// Gradient rules of the parameterised activations and the trigonometric and
// hyperbolic functions (one com.ort_train ActivationGrad(dY, X) node carrying
// the forward's op type and attributes), and PRelu.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

// dX = dY * f'(X): the kernel reads the forward's attributes from the node.
Status activation_rule(GradientContext& c) {
  std::vector<Attribute> attrs = c.node().attributes;
  attrs.push_back(Attribute::make_string("activation", c.node().op_type));
  ASSIGN_OR_RETURN(auto g, c.add1("ActivationGrad", {c.GO(0), c.I(0)}, attrs, kOrtTrainDomain));
  c.set_GI(0, g);
  return Status::Ok();
}

// PRelu(X, slope): dX = dY * (X < 0 ? slope : 1), dslope = dY * (X < 0 ? X : 0),
// both in X's shape (the driver sums dslope back to the slope's shape).
Status prelu_rule(GradientContext& c) {
  std::string zero = c.builder().scalar(0.0, c.dtype(c.I(0)));
  ASSIGN_OR_RETURN(auto negative, c.add1("Less", {c.I(0), zero}));
  if (c.needs_GI(0)) {
    ASSIGN_OR_RETURN(auto scaled, c.add1("Mul", {c.GO(0), c.I(1)}));
    ASSIGN_OR_RETURN(auto g, c.add1("Where", {negative, scaled, c.GO(0)}));
    c.set_GI(0, g);
  }
  if (c.needs_GI(1)) {
    ASSIGN_OR_RETURN(auto gx, c.add1("Mul", {c.GO(0), c.I(0)}));
    ASSIGN_OR_RETURN(auto g, c.add1("Where", {negative, gx, zero}));
    c.set_GI(1, g);
  }
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("HardSigmoid").rule(activation_rule);
ORT_GRADIENT("HardSwish").rule(activation_rule);
ORT_GRADIENT("Elu").rule(activation_rule);
ORT_GRADIENT("Selu").rule(activation_rule);
ORT_GRADIENT("Celu").rule(activation_rule);
ORT_GRADIENT("ThresholdedRelu").rule(activation_rule);
ORT_GRADIENT("Shrink").rule(activation_rule);
ORT_GRADIENT("Softsign").rule(activation_rule);
ORT_GRADIENT("Mish").rule(activation_rule);
ORT_GRADIENT("Tan").rule(activation_rule);
ORT_GRADIENT("Sinh").rule(activation_rule);
ORT_GRADIENT("Cosh").rule(activation_rule);
ORT_GRADIENT("Asin").rule(activation_rule);
ORT_GRADIENT("Acos").rule(activation_rule);
ORT_GRADIENT("Asinh").rule(activation_rule);
ORT_GRADIENT("Acosh").rule(activation_rule);
ORT_GRADIENT("Atanh").rule(activation_rule);
ORT_GRADIENT("PRelu").rule(prelu_rule);

}  // namespace ort_train
