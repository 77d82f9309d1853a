// Gradient rule of ConvTranspose, the adjoint of Conv with the same geometry:
//   dX = Conv(dY, W)                      (same strides, dilations, pads, group)
//   dW = the weight gradient of that Conv with dY as its input and X as its
//        output gradient: ConvGrad(X, dY, W) output 1
//   dB = dY summed over every axis but the channel axis
#include "autodiff/gradient_rule.h"
#include "graph/ops/conv_transpose.h"

namespace ort_train {
namespace {

Status conv_transpose_rule(GradientContext& c) {
  const OptShape &xs = c.shape(c.I(0)), &ws = c.shape(c.I(1));
  if (!xs || !ws || !shape_fully_known(*xs) || !shape_fully_known(*ws))
    return c.unsupported_case("input and weight shapes must be known to resolve the padding");
  Dims x = dims_from_shape(*xs), w = dims_from_shape(*ws);
  std::vector<int64_t> spatial(x.begin() + 2, x.end());
  std::vector<int64_t> kernel = c.node().attr_ints("kernel_shape");
  if (kernel.empty()) kernel.assign(w.begin() + 2, w.end());
  ASSIGN_OR_RETURN(auto geo, conv_transpose_geometry(c.node(), spatial, kernel));
  std::vector<int64_t> strides, dilations, pads(2 * geo.size());
  for (size_t d = 0; d < geo.size(); ++d) {
    strides.push_back(geo[d].stride);
    dilations.push_back(geo[d].dilation);
    pads[d] = geo[d].pad_begin;
    pads[geo.size() + d] = geo[d].pad_end;
  }
  std::vector<Attribute> conv_attrs{Attribute::make_ints("strides", strides), Attribute::make_ints("dilations", dilations),
                                    Attribute::make_ints("pads", pads), Attribute::make_ints("kernel_shape", kernel),
                                    Attribute::make_int("group", c.node().attr_int("group", 1))};
  if (c.needs_GI(0)) {
    ASSIGN_OR_RETURN(auto g, c.add1("Conv", {c.GO(0), c.I(1)}, conv_attrs));
    c.set_GI(0, g);
  }
  if (c.needs_GI(1)) {
    ASSIGN_OR_RETURN(auto g, c.add("ConvGrad", {c.I(0), c.GO(0), c.I(1)}, 2, conv_attrs, kOrtTrainDomain));
    // Only dW is wanted: leave ConvGrad's dX output out.
    Node& n = c.builder().model().graph.nodes.back();
    n.outputs[0] = "";
    c.set_GI(1, g[1]);
  }
  if (c.num_inputs() > 2 && c.has_input(2) && c.needs_GI(2)) {
    std::vector<int64_t> axes{0};
    for (size_t d = 2; d < x.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    ASSIGN_OR_RETURN(auto g, c.builder().reduce_sum(c.GO(0), axes, false));
    c.set_GI(2, g);
  }
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("ConvTranspose").rule(conv_transpose_rule);

}  // namespace ort_train
