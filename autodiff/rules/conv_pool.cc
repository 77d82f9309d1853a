// Gradient rules of Conv and the pooling ops.
#include "autodiff/gradient_rule.h"
#include "graph/ops/window_geometry.h"

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
  // A gradient nobody wants is left out, so the kernel skips it: the first
  // layer's dX (its input is data), a frozen filter's dW.
  Node& n = c.builder().model().graph.nodes.back();
  if (c.needs_GI(0)) c.set_GI(0, g[0]);
  else n.outputs[0] = "";
  if (c.needs_GI(1)) c.set_GI(1, g[1]);
  else n.outputs[1] = "";
  if (bias && c.needs_GI(2)) c.set_GI(2, g[2]);
  else if (bias) n.outputs[2] = "";
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

// The part of LpPool's gradient that is a function of each output:
// dY / Y^(p-1) (0 where Y is 0, i.e. the whole window is 0). With
// d y / d x_i = sign(x_i) |x_i|^(p-1) / y^(p-1), the input gradient is that
// times lp_factor(x) summed over the windows holding x_i.
Result<std::string> lp_output_weight(GradientContext& c, int64_t p) {
  if (p == 1) return c.GO(0);
  DType t = c.dtype(c.I(0));
  std::string y = c.O(0);
  if (p > 2) {
    ASSIGN_OR_RETURN(y, c.add1("Pow", {c.O(0), c.builder().scalar(static_cast<double>(p - 1), t)}));
  }
  ASSIGN_OR_RETURN(auto ratio, c.add1("Div", {c.GO(0), y}));
  ASSIGN_OR_RETURN(auto empty, c.add1("Equal", {c.O(0), c.builder().scalar(0.0, t)}));
  return c.add1("Where", {empty, c.builder().scalar(0.0, t), ratio});
}

// sign(x) |x|^(p-1): x itself for p = 2.
Result<std::string> lp_factor(GradientContext& c, int64_t p) {
  if (p == 2) return c.I(0);
  ASSIGN_OR_RETURN(auto sign, c.add1("Sign", {c.I(0)}));
  if (p == 1) return sign;
  ASSIGN_OR_RETURN(auto a, c.add1("Abs", {c.I(0)}));
  ASSIGN_OR_RETURN(auto pw, c.add1("Pow", {a, c.builder().scalar(static_cast<double>(p - 1), c.dtype(c.I(0)))}));
  return c.add1("Mul", {sign, pw});
}

// LpPool: the windowed sum of the output weights is AveragePoolGrad (which
// shares each window's value among the window's elements inside the input) of
// the weights times each window's inside count; that count is LpPool with p = 1
// over ones. Both ops run on every device, so no kernel of its own.
Status lp_pool_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(int64_t p, lp_pool_order(c.node(), c.opset()));
  ASSIGN_OR_RETURN(auto weight, lp_output_weight(c, p));
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  if (c.dtype(c.I(0)) != DType::kFloat && c.dtype(c.I(0)) != DType::kDouble)
    return c.unsupported_case("{} input (float32 and float64 only)", dtype_name(c.dtype(c.I(0))));
  Tensor one = c.dtype(c.I(0)) == DType::kDouble ? Tensor::from_vector<double>({1}, {1.0})
                                                 : Tensor::from_vector<float>({1}, {1.f});
  ASSIGN_OR_RETURN(auto ones, c.add1("ConstantOfShape", {shape}, {Attribute::make_tensor("value", one)}));
  std::vector<Attribute> attrs;
  for (const Attribute& a : c.node().attributes)
    if (a.name != "p") attrs.push_back(a);
  std::vector<Attribute> count_attrs = attrs;
  count_attrs.push_back(Attribute::make_int("p", 1));
  ASSIGN_OR_RETURN(auto count, c.add1("LpPool", {ones}, count_attrs));
  ASSIGN_OR_RETURN(auto scaled, c.add1("Mul", {weight, count}));
  attrs.push_back(Attribute::make_int("count_include_pad", 0));
  ASSIGN_OR_RETURN(auto summed, c.add1("AveragePoolGrad", {scaled, shape}, attrs, kOrtTrainDomain));
  c.builder().refine_shape(summed, c.shape(c.I(0)));
  ASSIGN_OR_RETURN(auto factor, lp_factor(c, p));
  ASSIGN_OR_RETURN(auto g, c.add1("Mul", {summed, factor}));
  c.set_GI(0, g);
  return Status::Ok();
}

// GlobalLpPool: one window per plane, so the weight broadcasts over it.
Status global_lp_pool_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(int64_t p, lp_pool_order(c.node(), c.opset()));
  ASSIGN_OR_RETURN(auto weight, lp_output_weight(c, p));
  ASSIGN_OR_RETURN(auto factor, lp_factor(c, p));
  ASSIGN_OR_RETURN(auto g, c.add1("Mul", {factor, weight}));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Conv").rule(conv_rule);
ORT_GRADIENT("MaxPool").no_gradient_from_outputs({1}).rule(max_pool_rule);
ORT_GRADIENT("AveragePool").rule(average_pool_rule);
ORT_GRADIENT("GlobalAveragePool").rule(global_average_rule);
ORT_GRADIENT("GlobalMaxPool").rule(global_max_rule);
ORT_GRADIENT("LpPool").rule(lp_pool_rule);
ORT_GRADIENT("GlobalLpPool").rule(global_lp_pool_rule);

}  // namespace ort_train
