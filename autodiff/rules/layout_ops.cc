// Gradient rules of Pad, Tile, CumSum, Trilu, GatherElements, Dropout and com.ort_train DropoutAdd.
#include "autodiff/gradient_rule.h"
#include "graph/ops/pad.h"

namespace ort_train {

namespace {

// Pad: each output's gradient goes back to the input position it was read from
// (PadGrad); the pads must be known when the graph is built.
Status pad_rule(GradientContext& c) {
  int64_t r = c.rank(c.I(0));
  if (r < 0) return c.unsupported_case("input rank must be known");
  const Tensor* pads = nullptr;
  const Tensor* axes = nullptr;
  if (c.opset() >= 11) {
    pads = c.constant_value(c.I(1));
    if (!pads) return c.unsupported_case("pads must be a constant");
    if (c.opset() >= 18 && c.num_inputs() > 3 && c.has_input(3)) {
      axes = c.constant_value(c.I(3));
      if (!axes) return c.unsupported_case("axes must be a constant");
    }
  }
  ASSIGN_OR_RETURN(auto p, pad_amounts(c.node(), c.opset(), r, pads, axes));
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  ASSIGN_OR_RETURN(auto g, c.add1("PadGrad", {c.GO(0), shape},
                                  {Attribute::make_ints("pads", p),
                                   Attribute::make_string("mode", c.node().attr_string("mode", "constant"))},
                                  kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

// Tile: view dY as [r0, d0, r1, d1, ...] and sum over the repeat axes.
Status tile_rule(GradientContext& c) {
  int64_t r = c.rank(c.I(0));
  if (r < 0) return c.unsupported_case("input rank must be known");
  GraphBuilder& b = c.builder();
  ASSIGN_OR_RETURN(auto shape, b.shape_of(c.I(0)));
  ASSIGN_OR_RETURN(auto reps, b.unsqueeze(c.I(1), {1}));
  ASSIGN_OR_RETURN(auto dims, b.unsqueeze(shape, {1}));
  ASSIGN_OR_RETURN(auto pairs, c.add1("Concat", {reps, dims}, {Attribute::make_int("axis", 1)}));
  ASSIGN_OR_RETURN(auto flat, c.add1("Reshape", {pairs, b.ints({-1})}));
  ASSIGN_OR_RETURN(auto blocks, c.add1("Reshape", {c.GO(0), flat}));
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < r; ++d) axes.push_back(2 * d);
  ASSIGN_OR_RETURN(auto g, b.reduce_sum(blocks, axes, false));
  b.refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

// CumSum: each input element feeds every later (earlier, when reversed) sum, so
// the gradient is the cumulative sum of dY in the other direction.
Status cumsum_rule(GradientContext& c) {
  std::vector<Attribute> attrs{Attribute::make_int("exclusive", c.node().attr_int("exclusive", 0)),
                               Attribute::make_int("reverse", c.node().attr_int("reverse", 0) == 0)};
  ASSIGN_OR_RETURN(auto g, c.add1("CumSum", {c.GO(0), c.I(1)}, attrs));
  c.set_GI(0, g);
  return Status::Ok();
}

// Trilu keeps a triangle: so does its gradient.
Status trilu_rule(GradientContext& c) {
  std::vector<std::string> in{c.GO(0)};
  if (c.num_inputs() > 1 && c.has_input(1)) in.push_back(c.I(1));
  ASSIGN_OR_RETURN(auto g, c.add1("Trilu", in, {Attribute::make_int("upper", c.node().attr_int("upper", 1))}));
  c.set_GI(0, g);
  return Status::Ok();
}

// GatherElements: scatter-add dY into zeros (repeated indices accumulate),
// through com.ort_train ScatterElements, which has reduction at any model opset.
Status gather_elements_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto zeros, c.builder().zeros_like(c.I(0)));
  ASSIGN_OR_RETURN(auto g, c.add1("ScatterElements", {zeros, c.I(1), c.GO(0)},
                                  {Attribute::make_int("axis", c.node().attr_int("axis", 0)),
                                   Attribute::make_string("reduction", "add")},
                                  kOrtTrainDomain));
  c.set_GI(0, g);
  return Status::Ok();
}

Status dropout_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto mask, c.ensure_output(1));
  std::vector<std::string> in{c.GO(0), mask};
  std::vector<Attribute> attrs;
  if (c.opset() >= 12) {
    in.push_back(c.num_inputs() > 1 ? c.I(1) : "");
    in.push_back(c.num_inputs() > 2 ? c.I(2) : "");
  } else {
    attrs = {Attribute::make_int("runtime_training", 1), Attribute::make_float("ratio", c.node().attr_float("ratio", 0.5f))};
  }
  ASSIGN_OR_RETURN(auto g, c.add1("DropoutGrad", in, attrs, kOrtTrainDomain));
  c.set_GI(0, g);
  return Status::Ok();
}

// DropoutAdd(X, R) = Dropout(X) + R: X's gradient is Dropout's of dY summed
// to X's shape (no node when the shapes are provably equal), through the
// mask; R's is dY, summed by the driver.
Status dropout_add_rule(GradientContext& c) {
  if (c.needs_GI(0)) {
    ASSIGN_OR_RETURN(auto mask, c.ensure_output(1));
    ASSIGN_OR_RETURN(auto dy, c.builder().sum_to_shape_of(c.GO(0), c.I(0)));
    std::vector<std::string> in{dy, mask};
    std::vector<Attribute> attrs;
    if (c.node().attr_int("runtime_training", 0) != 0) {
      attrs = {Attribute::make_int("runtime_training", 1),
               Attribute::make_float("ratio", c.node().attr_float("ratio", 0.5f))};
    } else {
      in.push_back(c.num_inputs() > 2 ? c.I(2) : "");
      in.push_back(c.num_inputs() > 3 ? c.I(3) : "");
    }
    ASSIGN_OR_RETURN(auto g, c.add1("DropoutGrad", in, attrs, kOrtTrainDomain));
    c.set_GI(0, g);
  }
  if (c.needs_GI(1)) c.set_GI(1, c.GO(0));
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Pad").no_gradient_for({1, 2, 3}).rule(pad_rule);
ORT_GRADIENT("Tile").no_gradient_for({1}).rule(tile_rule);
ORT_GRADIENT("CumSum").no_gradient_for({1}).rule(cumsum_rule);
ORT_GRADIENT("Trilu").no_gradient_for({1}).rule(trilu_rule);
ORT_GRADIENT("GatherElements").no_gradient_for({1}).rule(gather_elements_rule);
ORT_GRADIENT("Dropout").no_gradient_for({1, 2}).no_gradient_from_outputs({1}).rule(dropout_rule);
ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "DropoutAdd").no_gradient_for({2, 3}).no_gradient_from_outputs({1}).rule(dropout_add_rule);

}  // namespace ort_train
