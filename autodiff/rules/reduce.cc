// Gradient rules of the Reduce* family. Each brings dY back to the input's rank
// (re-inserting reduced axes when keepdims=0) so it broadcasts over the input,
// then multiplies by the derivative of the reduction at each element.
#include "autodiff/gradient_rule.h"
#include "graph/ops/reduce.h"

namespace ort_train {
namespace {

struct Unreduced {
  std::string dy;  // dY with the input's rank (size 1 on reduced axes)
  std::string y;   // Y likewise
  bool noop = false;
};

Result<Unreduced> unreduce(GradientContext& c) {
  int64_t r = c.rank(c.I(0));
  if (r < 0) return c.unsupported_case("input rank must be known");
  const Tensor* axes_value = c.has_input(1) ? c.constant_value(c.I(1)) : nullptr;
  if (c.has_input(1) && !axes_value) return c.unsupported_case("axes must be a constant");
  ASSIGN_OR_RETURN(ReduceAxes ra, resolve_reduce_axes(c.node(), c.opset(), r, axes_value, c.has_input(1)));
  Unreduced u{c.GO(0), c.O(0), ra.noop};
  if (ra.noop || ra.keepdims) return u;
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < r; ++d)
    if (ra.reduced[static_cast<size_t>(d)]) axes.push_back(d);
  if (axes.empty() || axes.size() == static_cast<size_t>(r)) return u;  // scalar dY broadcasts as is
  ASSIGN_OR_RETURN(u.dy, c.builder().unsqueeze(u.dy, axes));
  ASSIGN_OR_RETURN(u.y, c.builder().unsqueeze(u.y, axes));
  return u;
}

Result<std::string> expand_to_input(GradientContext& c, const std::string& v) {
  ASSIGN_OR_RETURN(auto s, c.builder().shape_of(c.I(0)));
  ASSIGN_OR_RETURN(auto g, c.add1("Expand", {v, s}));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  return g;
}

Status sum_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto u, unreduce(c));
  if (u.noop) {
    c.set_GI(0, c.GO(0));
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(auto g, expand_to_input(c, u.dy));
  c.set_GI(0, g);
  return Status::Ok();
}

// Elements per output value, as a scalar of the input's dtype.
Result<std::string> reduced_count(GradientContext& c) {
  DType t = c.dtype(c.I(0));
  ASSIGN_OR_RETURN(auto nx, c.add1("Size", {c.I(0)}));
  ASSIGN_OR_RETURN(auto ny, c.add1("Size", {c.O(0)}));
  ASSIGN_OR_RETURN(auto fx, c.add1("Cast", {nx}, {Attribute::make_int("to", static_cast<int64_t>(t))}));
  ASSIGN_OR_RETURN(auto fy, c.add1("Cast", {ny}, {Attribute::make_int("to", static_cast<int64_t>(t))}));
  return c.add1("Div", {fx, fy});
}

Status mean_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto u, unreduce(c));
  if (u.noop) {
    c.set_GI(0, c.GO(0));
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(auto n, reduced_count(c));
  ASSIGN_OR_RETURN(auto d, c.add1("Div", {u.dy, n}));
  ASSIGN_OR_RETURN(auto g, expand_to_input(c, d));
  c.set_GI(0, g);
  return Status::Ok();
}

// dX = dY' * f(x, y') for the reductions whose derivative depends on the element.
using ElementFactor = std::function<Result<std::string>(GradientContext&, const std::string& y)>;
std::function<Status(GradientContext&)> elementwise(ElementFactor f) {
  return [f](GradientContext& c) -> Status {
    ASSIGN_OR_RETURN(auto u, unreduce(c));
    if (u.noop) {
      c.set_GI(0, c.GO(0));
      return Status::Ok();
    }
    ASSIGN_OR_RETURN(auto factor, f(c, u.y));
    ASSIGN_OR_RETURN(auto g, c.add1("Mul", {u.dy, factor}));
    c.set_GI(0, g);
    return Status::Ok();
  };
}

std::string scalar(GradientContext& c, double v) { return c.builder().scalar(v, c.dtype(c.I(0))); }

// Max/Min: dY goes to the elements equal to the result, split among ties
// (PyTorch's amax/amin do the same).
Result<std::string> extremum_factor(GradientContext& c, const std::string& y) {
  ASSIGN_OR_RETURN(auto eq, c.add1("Equal", {c.I(0), y}));
  ASSIGN_OR_RETURN(auto mask, c.add1("Cast", {eq}, {Attribute::make_int("to", static_cast<int64_t>(c.dtype(c.I(0))))}));
  // Count ties per output with the same reduction as the forward (a ReduceSum over the same axes).
  Node count_node = c.node();
  std::vector<std::string> inputs = count_node.inputs;
  inputs[0] = mask;
  std::vector<Attribute> attrs = count_node.attributes;
  bool keep = false;
  for (auto& a : attrs)
    if (a.name == "keepdims") {
      a.i = 1;
      keep = true;
    }
  if (!keep) attrs.push_back(Attribute::make_int("keepdims", 1));
  // ReduceSum took axes as an input from opset 13, ReduceMax/Min only from 18.
  if (c.opset() >= 13 && c.opset() < 18) {
    std::vector<int64_t> axes = c.node().attr_ints("axes");
    std::vector<Attribute> kept;
    for (const auto& a : attrs)
      if (a.name != "axes") kept.push_back(a);
    attrs = kept;
    inputs = {mask};
    if (!axes.empty()) inputs.push_back(c.builder().ints(axes));
  }
  ASSIGN_OR_RETURN(auto count, c.add1("ReduceSum", inputs, attrs));
  return c.add1("Div", {mask, count});
}

}  // namespace

ORT_GRADIENT("ReduceSum").no_gradient_for({1}).rule(sum_rule);
ORT_GRADIENT("ReduceMean").no_gradient_for({1}).rule(mean_rule);
ORT_GRADIENT("ReduceSumSquare").no_gradient_for({1}).rule(elementwise([](GradientContext& c, const std::string&) {
  return c.add1("Mul", {c.I(0), scalar(c, 2.0)});
}));
ORT_GRADIENT("ReduceL1").no_gradient_for({1}).rule(elementwise([](GradientContext& c, const std::string&) {
  return c.add1("Sign", {c.I(0)});
}));
ORT_GRADIENT("ReduceL2").no_gradient_for({1}).rule(elementwise([](GradientContext& c, const std::string& y) {
  return c.add1("Div", {c.I(0), y});
}));
ORT_GRADIENT("ReduceLogSumExp").no_gradient_for({1}).rule(elementwise(
    [](GradientContext& c, const std::string& y) -> Result<std::string> {
      ASSIGN_OR_RETURN(auto d, c.add1("Sub", {c.I(0), y}));
      return c.add1("Exp", {d});
    }));
// log(sum x)' = 1 / sum x = exp(-y), expanded to X's shape; with
// noop_with_empty_axes the op is log(x), whose derivative is 1 / x.
ORT_GRADIENT("ReduceLogSum").no_gradient_for({1}).rule([](GradientContext& c) -> Status {
  ASSIGN_OR_RETURN(auto u, unreduce(c));
  if (u.noop) {
    ASSIGN_OR_RETURN(auto g, c.add1("Div", {c.GO(0), c.I(0)}));
    c.set_GI(0, g);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(auto n, c.add1("Neg", {u.y}));
  ASSIGN_OR_RETURN(auto inv, c.add1("Exp", {n}));
  ASSIGN_OR_RETURN(auto shape, c.add1("Shape", {c.I(0)}));
  ASSIGN_OR_RETURN(auto factor, c.add1("Expand", {inv, shape}));
  ASSIGN_OR_RETURN(auto g, c.add1("Mul", {u.dy, factor}));
  c.set_GI(0, g);
  return Status::Ok();
});
ORT_GRADIENT("ReduceProd").no_gradient_for({1}).rule(elementwise([](GradientContext& c, const std::string& y) {
  return c.add1("Div", {y, c.I(0)});
}));
ORT_GRADIENT("ReduceMax").no_gradient_for({1}).rule(elementwise(extremum_factor));
ORT_GRADIENT("ReduceMin").no_gradient_for({1}).rule(elementwise(extremum_factor));

}  // namespace ort_train
