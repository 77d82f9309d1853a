// Gradient rules of the broadcasting binary and variadic ops. Rules return
// gradients in the output's (broadcast) shape; the driver sums each back to its
// input's shape.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Status add_rule(GradientContext& c) {
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.needs_GI(i)) c.set_GI(i, c.GO(0));
  return Status::Ok();
}

Status sub_rule(GradientContext& c) {
  if (c.needs_GI(0)) c.set_GI(0, c.GO(0));
  if (c.needs_GI(1)) {
    ASSIGN_OR_RETURN(auto g, c.add1("Neg", {c.GO(0)}));
    c.set_GI(1, g);
  }
  return Status::Ok();
}

Status mul_rule(GradientContext& c) {
  if (c.needs_GI(0)) {
    ASSIGN_OR_RETURN(auto g, c.add1("Mul", {c.GO(0), c.I(1)}));
    c.set_GI(0, g);
  }
  if (c.needs_GI(1)) {
    ASSIGN_OR_RETURN(auto g, c.add1("Mul", {c.GO(0), c.I(0)}));
    c.set_GI(1, g);
  }
  return Status::Ok();
}

// d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b.
Status div_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto ga, c.add1("Div", {c.GO(0), c.I(1)}));
  if (c.needs_GI(0)) c.set_GI(0, ga);
  if (c.needs_GI(1)) {
    ASSIGN_OR_RETURN(auto t, c.add1("Mul", {ga, c.O(0)}));
    ASSIGN_OR_RETURN(auto g, c.add1("Neg", {t}));
    c.set_GI(1, g);
  }
  return Status::Ok();
}

// d(a^b)/da = b * a^(b-1); d(a^b)/db = a^b * log(a). An integer exponent has no
// gradient (the driver never asks for non-float inputs).
Status pow_rule(GradientContext& c) {
  DType t = c.dtype(c.I(0));
  if (c.needs_GI(0)) {
    std::string b = c.I(1);
    if (c.dtype(b) != t) { ASSIGN_OR_RETURN(b, c.add1("Cast", {b}, {Attribute::make_int("to", static_cast<int64_t>(t))})); }
    ASSIGN_OR_RETURN(auto bm1, c.add1("Sub", {b, c.builder().scalar(1.0, t)}));
    ASSIGN_OR_RETURN(auto p, c.add1("Pow", {c.I(0), bm1}));
    ASSIGN_OR_RETURN(auto bp, c.add1("Mul", {b, p}));
    ASSIGN_OR_RETURN(auto g, c.add1("Mul", {c.GO(0), bp}));
    c.set_GI(0, g);
  }
  if (c.needs_GI(1)) {
    ASSIGN_OR_RETURN(auto log, c.add1("Log", {c.I(0)}));
    ASSIGN_OR_RETURN(auto ol, c.add1("Mul", {c.O(0), log}));
    ASSIGN_OR_RETURN(auto g, c.add1("Mul", {c.GO(0), ol}));
    c.set_GI(1, g);
  }
  return Status::Ok();
}

// Max/Min: the gradient goes to the inputs equal to the result, split evenly
// among ties (as PyTorch's maximum/minimum do).
Status extremum_rule(GradientContext& c) {
  DType t = c.dtype(c.O(0));
  std::vector<std::string> masks;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(auto eq, c.add1("Equal", {c.I(i), c.O(0)}));
    ASSIGN_OR_RETURN(auto m, c.add1("Cast", {eq}, {Attribute::make_int("to", static_cast<int64_t>(t))}));
    masks.push_back(m);
  }
  std::string count = masks[0];
  if (masks.size() > 1) { ASSIGN_OR_RETURN(count, c.add1("Sum", masks)); }
  ASSIGN_OR_RETURN(auto share, c.add1("Div", {c.GO(0), count}));
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.needs_GI(i)) continue;
    ASSIGN_OR_RETURN(auto g, c.add1("Mul", {share, masks[i]}));
    c.set_GI(i, g);
  }
  return Status::Ok();
}

Status mean_rule(GradientContext& c) {
  DType t = c.dtype(c.O(0));
  ASSIGN_OR_RETURN(auto g, c.add1("Div", {c.GO(0), c.builder().scalar(static_cast<double>(c.num_inputs()), t)}));
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.needs_GI(i)) c.set_GI(i, g);
  return Status::Ok();
}

// Where(cond, x, y): the gradient goes to x where cond holds, to y elsewhere.
Status where_rule(GradientContext& c) {
  std::string zero = c.builder().scalar(0.0, c.dtype(c.O(0)));
  if (c.needs_GI(1)) {
    ASSIGN_OR_RETURN(auto g, c.add1("Where", {c.I(0), c.GO(0), zero}));
    c.set_GI(1, g);
  }
  if (c.needs_GI(2)) {
    ASSIGN_OR_RETURN(auto g, c.add1("Where", {c.I(0), zero, c.GO(0)}));
    c.set_GI(2, g);
  }
  return Status::Ok();
}

// Mod(A, B) = A - q B with q = trunc(A / B) (fmod = 1; floor for fmod = 0):
// dA = dY, dB = -dY q. q is (A - Y) / B, read from the forward's output, so no
// rounding op is needed (PyTorch's fmod and remainder backward are the same).
Status mod_rule(GradientContext& c) {
  if (c.needs_GI(0)) c.set_GI(0, c.GO(0));
  if (c.needs_GI(1)) {
    ASSIGN_OR_RETURN(auto whole, c.add1("Sub", {c.I(0), c.O(0)}));
    ASSIGN_OR_RETURN(auto q, c.add1("Div", {whole, c.I(1)}));
    ASSIGN_OR_RETURN(auto gq, c.add1("Mul", {c.GO(0), q}));
    ASSIGN_OR_RETURN(auto g, c.add1("Neg", {gq}));
    c.set_GI(1, g);
  }
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Add").rule(add_rule);
ORT_GRADIENT("Sum").rule(add_rule);
ORT_GRADIENT("Sub").rule(sub_rule);
ORT_GRADIENT("Mul").rule(mul_rule);
ORT_GRADIENT("Div").rule(div_rule);
ORT_GRADIENT("Pow").rule(pow_rule);
ORT_GRADIENT("Mod").rule(mod_rule);
ORT_GRADIENT("Max").rule(extremum_rule);
ORT_GRADIENT("Min").rule(extremum_rule);
ORT_GRADIENT("Mean").rule(mean_rule);
ORT_GRADIENT("Where").no_gradient_for({0}).rule(where_rule);

// Comparisons and logic produce booleans: no gradient flows through them.
ORT_GRADIENT("Equal").not_differentiable();
ORT_GRADIENT("Less").not_differentiable();
ORT_GRADIENT("LessOrEqual").not_differentiable();
ORT_GRADIENT("Greater").not_differentiable();
ORT_GRADIENT("GreaterOrEqual").not_differentiable();
ORT_GRADIENT("And").not_differentiable();
ORT_GRADIENT("Or").not_differentiable();
ORT_GRADIENT("Xor").not_differentiable();
ORT_GRADIENT("Not").not_differentiable();

}  // namespace ort_train
