// Shape rules and the permuted view of DepthToSpace and SpaceToDepth (and
// com.ort_train SpaceToDepth with a mode: DepthToSpace CRD's inverse).
#include "graph/ops/depth_space.h"

#include "graph/op_schema.h"

namespace ort_train {

Result<bool> depth_space_is_crd(const Node& node) {
  std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    return invalid_argument("{}: mode must be DCR or CRD, got '{}'", node.describe(), mode);
  return mode == "CRD";
}

Result<DepthSpaceView> depth_space_view(const Dims& in, int64_t b, bool to_depth, bool crd, const Node& node) {
  if (in.size() != 4) return shape_error("{}: needs a 4-D input [N, C, H, W], got rank {}", node.describe(), in.size());
  if (b < 1) return invalid_argument("{}: blocksize must be positive, got {}", node.describe(), b);
  const int64_t n = in[0], c = in[1], h = in[2], w = in[3];
  DepthSpaceView v;
  if (!to_depth) {
    if (c % (b * b) != 0)
      return shape_error("{}: {} channels do not divide into blocks of {}x{}", node.describe(), c, b, b);
    const int64_t cc = c / (b * b);
    v.out_dims = {n, cc, h * b, w * b};
    v.dims = {n, cc, h, b, w, b};
    // Input channel = (b1 * b + b2) * cc + c' (DCR) or c' * b * b + b1 * b + b2 (CRD).
    const int64_t hw = h * w;
    const int64_t s_c = crd ? b * b * hw : hw, s_b1 = crd ? b * hw : b * cc * hw, s_b2 = crd ? hw : cc * hw;
    v.src_strides = {c * hw, s_c, w, s_b1, 1, s_b2};
    return v;
  }
  if (h % b != 0 || w % b != 0)
    return shape_error("{}: H {} and W {} must be multiples of the blocksize {}", node.describe(), h, w, b);
  const int64_t hb = h / b, wb = w / b;
  v.out_dims = {n, c * b * b, hb, wb};
  // Output channel = (b1 * b + b2) * c + c' (DCR) or c' * b * b + b1 * b + b2 (CRD);
  // the input element is [n, c', y * b + b1, x * b + b2].
  const int64_t hw = h * w;
  if (crd) {
    v.dims = {n, c, b, b, hb, wb};
    v.src_strides = {c * hw, hw, w, 1, b * w, b};
  } else {
    v.dims = {n, b, b, c, hb, wb};
    v.src_strides = {c * hw, w, 1, hw, b * w, b};
  }
  return v;
}

namespace {

Status depth_space_rule(InferContext& ctx, bool to_depth) {
  const OptShape& in = ctx.input_shape(0);
  DType dt = ctx.input_dtype(0);
  if (!in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  if (in->size() != 4) return shape_error("{}: needs a 4-D input [N, C, H, W]", ctx.node().describe());
  int64_t b = ctx.attr_int("blocksize", 0);
  if (b < 1) return invalid_argument("{}: needs a positive blocksize", ctx.node().describe());
  RETURN_IF_ERROR(depth_space_is_crd(ctx.node()).status());
  auto scaled = [](const Dim& d, int64_t mul, int64_t div) -> Dim {
    if (!d.known()) return Dim();
    return Dim(d.value * mul / div);
  };
  const Shape& s = *in;
  if (to_depth) {
    ctx.set_output(0, dt, Shape{s[0], scaled(s[1], b * b, 1), scaled(s[2], 1, b), scaled(s[3], 1, b)});
  } else {
    ctx.set_output(0, dt, Shape{s[0], scaled(s[1], 1, b * b), scaled(s[2], b, 1), scaled(s[3], b, 1)});
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "DepthToSpace", 1, 1000, [](InferContext& c) { return depth_space_rule(c, false); }, kPlainOp);
ORT_REGISTER_OP("", "SpaceToDepth", 1, 1000, [](InferContext& c) { return depth_space_rule(c, true); }, kPlainOp);
// With a `mode` attribute: DepthToSpace's gradient.
ORT_REGISTER_OP(kOrtTrainDomain, "SpaceToDepth", 1, 1000, [](InferContext& c) { return depth_space_rule(c, true); },
                kPlainOp);

}  // namespace ort_train
