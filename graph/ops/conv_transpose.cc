// ConvTranspose: geometry (explicit pads, output_padding, output_shape,
// auto_pad) and the shape rule. Output channels are W.dims[1] * group.
#include "graph/ops/conv_transpose.h"

#include <algorithm>
#include <cstdint>

#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {

Result<std::vector<WindowDim>> conv_transpose_geometry(const Node& node, const std::vector<int64_t>& spatial_in,
                                                       const std::vector<int64_t>& kernel) {
  size_t nd = spatial_in.size();
  auto per_dim = [&](const char* name, int64_t def) {
    std::vector<int64_t> v = node.attr_ints(name);
    if (v.empty()) v.assign(nd, def);
    return v;
  };
  std::vector<int64_t> strides = per_dim("strides", 1), dilations = per_dim("dilations", 1);
  std::vector<int64_t> out_pad = per_dim("output_padding", 0), pads = node.attr_ints("pads");
  std::vector<int64_t> output_shape = node.attr_ints("output_shape");
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (strides.size() != nd || dilations.size() != nd || out_pad.size() != nd || kernel.size() != nd ||
      (!pads.empty() && pads.size() != 2 * nd) ||
      (!output_shape.empty() && output_shape.size() != nd && output_shape.size() != nd + 2))
    return shape_error("{}: attributes do not match {} spatial dims", node.describe(), nd);
  if (pads.empty()) pads.assign(2 * nd, 0);
  auto positive = [](const std::vector<int64_t>& v, int64_t least) {
    return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x >= least; });
  };
  if (!positive(strides, 1) || !positive(dilations, 1) || !positive(kernel, 1) || !positive(out_pad, 0) ||
      !positive(pads, 0) || !positive(output_shape, 0))
    return shape_error("{}: kernel, strides and dilations must be positive; pads, output_padding and output_shape "
                       "not negative", node.describe());
  std::vector<WindowDim> geo(nd);
  for (size_t d = 0; d < nd; ++d) {
    WindowDim& w = geo[d];
    w.kernel = kernel[d];
    w.stride = strides[d];
    w.dilation = dilations[d];
    w.out = spatial_in[d];
    // In 128 bits: every term comes from a file and may be near 2^63.
    const __int128 full_wide = static_cast<__int128>(strides[d]) * (spatial_in[d] - 1) + out_pad[d] +
                               static_cast<__int128>(kernel[d] - 1) * dilations[d] + 1;
    if (full_wide > INT64_MAX || full_wide < 0)
      return shape_error("{}: output size along spatial dim {} is out of range", node.describe(), d);
    const int64_t full = static_cast<int64_t>(full_wide);
    bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (!output_shape.empty() || same) {
      int64_t target = !output_shape.empty() ? output_shape[output_shape.size() - nd + d] : spatial_in[d] * strides[d];
      int64_t total = full - target;
      if (total < 0) total = 0;
      bool lower = auto_pad == "SAME_LOWER";
      w.pad_begin = lower ? total - total / 2 : total / 2;
      w.pad_end = total - w.pad_begin;
      w.in = target;
    } else {
      w.pad_begin = pads[d];
      w.pad_end = pads[nd + d];
      const __int128 in = static_cast<__int128>(full) - w.pad_begin - w.pad_end;
      w.in = in < 0 ? -1 : static_cast<int64_t>(in);
    }
    if (w.in < 0) return shape_error("{}: negative output size along spatial dim {}", node.describe(), d);
  }
  return geo;
}

namespace {

Status conv_transpose_rule(InferContext& ctx) {
  const OptShape &x = ctx.input_shape(0), &w = ctx.input_shape(1);
  DType t = ctx.input_dtype(0);
  if (!x || !w) {
    ctx.set_output(0, t, std::nullopt);
    return Status::Ok();
  }
  if (x->size() < 3 || w->size() != x->size())
    return shape_error("{}: X {} and W {} must both be [N, C, spatial...]", ctx.node().describe(), shape_to_string(x),
                       shape_to_string(w));
  // W is [C, M / group, kernel...]: the kernel reads it group by group of X's channels.
  ASSIGN_OR_RETURN(int64_t group, conv_group(ctx.node()));
  if ((*x)[1].known() && (*w)[0].known() && (*x)[1].value != (*w)[0].value)
    return shape_error("{}: input has {} channels but W has {}", ctx.node().describe(), (*x)[1].value, (*w)[0].value);
  if ((*x)[1].known() && (*x)[1].value % group != 0)
    return shape_error("{}: {} input channels do not divide into {} groups", ctx.node().describe(), (*x)[1].value,
                       group);
  Shape out{(*x)[0], (*w)[1].known() ? Dim(mul_saturating((*w)[1].value, group)) : Dim()};
  RETURN_IF_ERROR(require_elements(ctx, 2, out[1], "the bias (one per output channel)"));
  std::vector<int64_t> spatial, kernel = ctx.attr_ints("kernel_shape");
  bool known = true;
  for (size_t d = 2; d < x->size(); ++d) {
    known = known && (*x)[d].known();
    spatial.push_back((*x)[d].value);
    if (ctx.attr_ints("kernel_shape").empty()) {
      known = known && (*w)[d].known();
      kernel.push_back((*w)[d].value);
    }
  }
  if (!known) {
    for (size_t d = 2; d < x->size(); ++d) out.emplace_back();
  } else {
    ASSIGN_OR_RETURN(auto geo, conv_transpose_geometry(ctx.node(), spatial, kernel));
    for (const WindowDim& g : geo) out.emplace_back(g.in);
  }
  ctx.set_output(0, t, out);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "ConvTranspose", 1, 1000, conv_transpose_rule, kPlainOp);

}  // namespace ort_train
