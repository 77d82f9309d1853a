// Shape rules of Col2Im(input [N, C * K, L], image_shape, block_shape) ->
// [N, C, image_shape...] and of its gradient op com.ort_train
// Im2Col(dY [N, C, image...], block_shape) -> [N, C * K, L], with the
// geometry both kernels share (graph/ops/col2im.h).
#include "graph/ops/col2im.h"

#include "graph/op_schema.h"

namespace ort_train {

Result<Col2ImGeometry> col2im_geometry(const Node& node, const Dims& image, const Dims& block) {
  const size_t d = image.size();
  if (d == 0 || block.size() != d)
    return shape_error("{}: image_shape {} and block_shape {} need one entry per spatial dim", node.describe(),
                       dims_to_string(image), dims_to_string(block));
  Col2ImGeometry g;
  g.image = image;
  g.block = block;
  g.strides = node.attr_ints("strides", Dims(d, 1));
  g.dilations = node.attr_ints("dilations", Dims(d, 1));
  Dims pads = node.attr_ints("pads", Dims(2 * d, 0));
  if (g.strides.size() != d || g.dilations.size() != d || pads.size() != 2 * d)
    return invalid_argument("{}: strides and dilations need {} values and pads {}, got {}, {} and {}",
                            node.describe(), d, 2 * d, g.strides.size(), g.dilations.size(), pads.size());
  g.pads_begin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(d));
  for (size_t i = 0; i < d; ++i) {
    if (image[i] < 1 || block[i] < 1 || g.strides[i] < 1 || g.dilations[i] < 1 || pads[i] < 0 || pads[i + d] < 0)
      return invalid_argument("{}: image {}, block {}, strides, dilations and pads must be positive (pads >= 0)",
                              node.describe(), dims_to_string(image), dims_to_string(block));
    const int64_t span = g.dilations[i] * (block[i] - 1) + 1;
    const int64_t padded = image[i] + pads[i] + pads[i + d];
    if (span > padded)
      return shape_error("{}: a block spans {} along dim {}, more than the padded image's {}", node.describe(), span,
                         i, padded);
    g.grid.push_back((padded - span) / g.strides[i] + 1);
    g.block_size *= block[i];
    g.columns *= g.grid.back();
    g.pixels *= image[i];
  }
  return g;
}

std::vector<int64_t> col2im_pixel_map(const Col2ImGeometry& g) {
  const size_t d = g.image.size();
  std::vector<int64_t> map(static_cast<size_t>(g.block_size * g.columns));
  std::vector<int64_t> kpos(d), lpos(d);
  for (int64_t k = 0; k < g.block_size; ++k) {
    for (int64_t rest = k, i = static_cast<int64_t>(d) - 1; i >= 0; --i) {
      kpos[i] = rest % g.block[i];
      rest /= g.block[i];
    }
    for (int64_t l = 0; l < g.columns; ++l) {
      for (int64_t rest = l, i = static_cast<int64_t>(d) - 1; i >= 0; --i) {
        lpos[i] = rest % g.grid[i];
        rest /= g.grid[i];
      }
      int64_t pixel = 0;
      for (size_t i = 0; i < d && pixel >= 0; ++i) {
        const int64_t at = lpos[i] * g.strides[i] - g.pads_begin[i] + kpos[i] * g.dilations[i];
        pixel = at < 0 || at >= g.image[i] ? -1 : pixel * g.image[i] + at;
      }
      map[static_cast<size_t>(k * g.columns + l)] = pixel;
    }
  }
  return map;
}

namespace {

// image_shape and block_shape are int64 (ONNX's type constraint): the kernel reads them so.
Result<std::optional<Dims>> int_values(const InferContext& ctx, size_t i) {
  if (ctx.input_dtype(i) != DType::kInt64 && ctx.input_dtype(i) != DType::kUndefined)
    return shape_error("{}: input {} must be int64, not {}", ctx.node().describe(), i, dtype_name(ctx.input_dtype(i)));
  const Tensor* v = ctx.input_value(i);
  if (!v) return std::optional<Dims>();
  return std::optional<Dims>(v->to_int64_vector());
}

Status col2im_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  if (in && in->size() != 3)
    return shape_error("{}: the input must be [N, C * prod(block_shape), L], got {}", ctx.node().describe(),
                       shape_to_string(in));
  ASSIGN_OR_RETURN(std::optional<Dims> image, int_values(ctx, 1));
  ASSIGN_OR_RETURN(std::optional<Dims> block, int_values(ctx, 2));
  if (!in || !image || !block) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(Col2ImGeometry g, col2im_geometry(ctx.node(), *image, *block));
  const Dim &cols = (*in)[1], &l = (*in)[2];
  if (cols.known() && cols.value % g.block_size != 0)
    return shape_error("{}: {} columns do not divide into blocks of {} values", ctx.node().describe(), cols.value,
                       g.block_size);
  if (l.known() && l.value != g.columns)
    return shape_error("{}: the input has {} block positions, the image, block, pads, strides and dilations make {}",
                       ctx.node().describe(), l.value, g.columns);
  Shape out{(*in)[0], cols.known() ? Dim(cols.value / g.block_size) : Dim()};
  for (int64_t s : *image) out.push_back(s);
  ctx.set_output(0, dt, out);
  return Status::Ok();
}

Status im2col_rule(InferContext& ctx) {
  const OptShape& dy = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  ASSIGN_OR_RETURN(std::optional<Dims> block, int_values(ctx, 1));
  if (!dy || !block || !shape_fully_known(Shape(dy->begin() + std::min<size_t>(2, dy->size()), dy->end()))) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  if (dy->size() < 3) return shape_error("{}: dY must be [N, C, spatial...]", ctx.node().describe());
  Dims image;
  for (size_t i = 2; i < dy->size(); ++i) image.push_back((*dy)[i].value);
  ASSIGN_OR_RETURN(Col2ImGeometry g, col2im_geometry(ctx.node(), image, *block));
  const Dim& c = (*dy)[1];
  ctx.set_output(0, dt, Shape{(*dy)[0], c.known() ? Dim(c.value * g.block_size) : Dim(), Dim(g.columns)});
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Col2Im", 18, 1000, col2im_rule, kRuleReadsInput(1) | kRuleReadsInput(2));
ORT_REGISTER_OP(kOrtTrainDomain, "Im2Col", 1, 1000, im2col_rule, kRuleReadsInput(1));

}  // namespace ort_train
