// Gradient rules of Gather and Slice: the gradient rebuilds a tensor of the
// data's shape (GatherGrad scatter-adds, SliceGrad writes back into zeros).
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Status gather_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  ASSIGN_OR_RETURN(auto g, c.add1("GatherGrad", {c.GO(0), shape, c.I(1)},
                                  {Attribute::make_int("axis", c.node().attr_int("axis", 0))}, kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

Status slice_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  std::vector<std::string> in{c.GO(0), shape};
  std::vector<Attribute> attrs;
  if (c.opset() < 10) {
    for (const char* k : {"starts", "ends", "axes"})
      if (const Attribute* a = c.node().attr(k)) attrs.push_back(*a);
  } else {
    for (size_t i = 1; i < c.num_inputs(); ++i) in.push_back(c.I(i));
  }
  ASSIGN_OR_RETURN(auto g, c.add1("SliceGrad", in, attrs, kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Gather").no_gradient_for({1}).rule(gather_rule);
ORT_GRADIENT("Slice").no_gradient_for({1, 2, 3, 4}).rule(slice_rule);

}  // namespace ort_train
