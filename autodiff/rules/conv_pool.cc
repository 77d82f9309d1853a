// Gradient rules of Conv and the pooling ops.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

// The forward's window attributes, minus those a pooling op only had at some opsets.
std::vector<Attribute> window_attrs(const GradientContext& c, bool drop_dilations) {
  std::vector<Attribute> out;
  for (const Attribute& a : c.node().attributes)
    if (!(drop_dilations && a.name == "dilations")) out.push_back(a);
  return out;
}

Status conv_rule(GradientContext& c) {
  bool bias = c.num_inputs() > 2 && c.has_input(2);
  ASSIGN_OR_RETURN(auto g, c.add("ConvGrad", {c.GO(0), c.I(0), c.I(1)}, bias ? 3 : 2, window_attrs(c, false),
                                 kOrtTrainDomain));
  if (c.needs_GI(0)) c.set_GI(0, g[0]);
  if (c.needs_GI(1)) c.set_GI(1, g[1]);
  if (bias && c.needs_GI(2)) c.set_GI(2, g[2]);
  return Status::Ok();
}

// The forward's argmax indices (an optional output from opset 8) locate each max.
Status max_pool_rule(GradientContext& c) {
  if (c.opset() < 8) return c.unsupported_case("MaxPool before opset 8 has no Indices output");
  if (c.node().attr_int("storage_order", 0) != 0) return c.unsupported_case("storage_order=1");
  ASSIGN_OR_RETURN(auto indices, c.ensure_output(1));
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  ASSIGN_OR_RETURN(auto g, c.add1("MaxPoolGrad", {c.GO(0), indices, shape}, {}, kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

Status average_pool_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  // AveragePool gained dilations at opset 19; the forward ignores stray ones before.
  ASSIGN_OR_RETURN(auto g, c.add1("AveragePoolGrad", {c.GO(0), shape}, window_attrs(c, c.opset() < 19),
                                  kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

// Global pools reduce every spatial dim: dY broadcast back over them.
Result<std::vector<int64_t>> spatial_axes(GradientContext& c) {
  int64_t r = c.rank(c.I(0));
  if (r < 0) return c.unsupported_case("input rank must be known");
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < r; ++d) axes.push_back(d);
  return axes;
}

Status global_average_rule(GradientContext& c) {
  DType t = c.dtype(c.I(0));
  ASSIGN_OR_RETURN(auto nx, c.add1("Size", {c.I(0)}));
  ASSIGN_OR_RETURN(auto ny, c.add1("Size", {c.O(0)}));
  ASSIGN_OR_RETURN(auto fx, c.add1("Cast", {nx}, {Attribute::make_int("to", static_cast<int64_t>(t))}));
  ASSIGN_OR_RETURN(auto fy, c.add1("Cast", {ny}, {Attribute::make_int("to", static_cast<int64_t>(t))}));
  ASSIGN_OR_RETURN(auto count, c.add1("Div", {fx, fy}));
  ASSIGN_OR_RETURN(auto share, c.add1("Div", {c.GO(0), count}));
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  ASSIGN_OR_RETURN(auto g, c.add1("Expand", {share, shape}));
  c.set_GI(0, g);
  return Status::Ok();
}

// GlobalMaxPool: to the elements equal to the max, split among ties.
Status global_max_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto axes, spatial_axes(c));
  ASSIGN_OR_RETURN(auto eq, c.add1("Equal", {c.I(0), c.O(0)}));
  ASSIGN_OR_RETURN(auto mask, c.add1("Cast", {eq}, {Attribute::make_int("to", static_cast<int64_t>(c.dtype(c.I(0))))}));
  ASSIGN_OR_RETURN(auto count, c.builder().reduce_sum(mask, axes, true));
  ASSIGN_OR_RETURN(auto share, c.add1("Div", {c.GO(0), count}));
  ASSIGN_OR_RETURN(auto g, c.add1("Mul", {mask, share}));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Conv").rule(conv_rule);
ORT_GRADIENT("MaxPool").no_gradient_from_outputs({1}).rule(max_pool_rule);
ORT_GRADIENT("AveragePool").rule(average_pool_rule);
ORT_GRADIENT("GlobalAveragePool").rule(global_average_rule);
ORT_GRADIENT("GlobalMaxPool").rule(global_max_rule);

}  // namespace ort_train
