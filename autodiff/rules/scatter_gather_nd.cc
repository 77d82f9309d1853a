// Gradient rules of the index-addressed ops added for autodiff coverage:
// GatherND, ScatterND, ScatterElements and TopK. Each gradient is again a
// gather or a scatter over the same indices (indices never get a gradient).
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

std::vector<Attribute> only(const Node& n, std::initializer_list<const char*> names) {
  std::vector<Attribute> out;
  for (const char* name : names)
    if (const Attribute* a = n.attr(name)) out.push_back(*a);
  return out;
}

// GatherND: dY's blocks added into zeros shaped like the data, where they
// were read (repeated index tuples accumulate), by the project's own
// GatherNDGrad: any opset (ScatterND's reduction exists only from 16) and any
// batch_dims.
Status gather_nd_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto shape, c.add1("Shape", {c.I(0)}));
  ASSIGN_OR_RETURN(auto g, c.add1("GatherNDGrad", {shape, c.I(1), c.GO(0)},
                                  {Attribute::make_int("batch_dims", c.node().attr_int("batch_dims", 0))},
                                  kOrtTrainDomain));
  c.set_GI(0, g);
  return Status::Ok();
}

// ScatterND / ScatterElements with reduction none: written positions take the
// update, so the data's gradient is dY with those positions zeroed and the
// updates' gradient is dY gathered there. With reduction add the data passes dY
// through unchanged.
Status scatter_rule(GradientContext& c, const char* scatter_op, const char* gather_op, std::vector<Attribute> axis) {
  std::string reduction = c.node().attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add") return c.unsupported_case("reduction '{}'", reduction);
  if (c.needs_GI(0)) {
    if (reduction == "add") {
      c.set_GI(0, c.GO(0));
    } else {
      ASSIGN_OR_RETURN(auto zeros, c.builder().zeros_like(c.I(2)));
      ASSIGN_OR_RETURN(auto g, c.add1(scatter_op, {c.GO(0), c.I(1), zeros}, axis));
      c.set_GI(0, g);
    }
  }
  if (c.needs_GI(2)) {
    ASSIGN_OR_RETURN(auto g, c.add1(gather_op, {c.GO(0), c.I(1)}, axis));
    c.set_GI(2, g);
  }
  return Status::Ok();
}

// TopK: each selected value's gradient goes back to where it came from.
Status topk_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto dv, c.GO_or_zeros(0));
  ASSIGN_OR_RETURN(auto indices, c.ensure_output(1));
  ASSIGN_OR_RETURN(auto zeros, c.builder().zeros_like(c.I(0)));
  // TopK's axis defaults to -1, ScatterElements' to 0: always pass it.
  ASSIGN_OR_RETURN(auto g, c.add1("ScatterElements", {zeros, indices, dv},
                                  {Attribute::make_int("axis", c.node().attr_int("axis", -1))}));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("GatherND").no_gradient_for({1}).rule(gather_nd_rule);
ORT_GRADIENT("ScatterND").no_gradient_for({1}).rule([](GradientContext& c) {
  return scatter_rule(c, "ScatterND", "GatherND", {});
});
ORT_GRADIENT("ScatterElements").no_gradient_for({1}).rule([](GradientContext& c) {
  return scatter_rule(c, "ScatterElements", "GatherElements", only(c.node(), {"axis"}));
});
// Scatter is ScatterElements' name at opsets 9-10, where GatherElements does not
// exist yet: the data's gradient is expressible, the updates' is not.
ORT_GRADIENT("Scatter").no_gradient_for({1}).rule([](GradientContext& c) {
  if (c.needs_GI(2)) return c.unsupported_case("the updates' gradient needs GatherElements (opset 11)");
  return scatter_rule(c, "Scatter", "", only(c.node(), {"axis"}));
});
ORT_GRADIENT("TopK").no_gradient_for({1}).rule(topk_rule);

}  // namespace ort_train
