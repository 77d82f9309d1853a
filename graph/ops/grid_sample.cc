// Shape rules of GridSample(X [N, C, H, W], Grid [N, H_out, W_out, 2]) ->
// Y [N, C, H_out, W_out] and of its gradient op com.ort_train
// GridSampleGrad(dY, X, Grid) -> dX, dGrid (shaped like X and Grid).
#include "graph/ops/grid_sample.h"

#include "graph/op_schema.h"

namespace ort_train {

Result<GridSampleParams> grid_sample_params(const Node& node, const Dims& x, const Dims& grid) {
  if (x.size() != 4)
    return unsupported("{}: GridSample of a rank-{} input: only 4-D [N, C, H, W] inputs are supported",
                       node.describe(), x.size());
  if (grid.size() != 4 || grid[3] != 2 || grid[0] != x[0])
    return shape_error("{}: the grid must be [N, H_out, W_out, 2] with N = {}, got {}", node.describe(), x[0],
                       dims_to_string(grid));
  GridSampleParams p;
  const std::string mode = node.attr_string("mode", "bilinear");
  if (mode == "bilinear" || mode == "linear") p.mode = GridMode::kBilinear;
  else if (mode == "nearest") p.mode = GridMode::kNearest;
  else if (mode == "bicubic" || mode == "cubic") p.mode = GridMode::kBicubic;
  else return invalid_argument("{}: unknown mode '{}'", node.describe(), mode);
  const std::string padding = node.attr_string("padding_mode", "zeros");
  if (padding == "zeros") p.padding = GridPadding::kZeros;
  else if (padding == "border") p.padding = GridPadding::kBorder;
  else if (padding == "reflection") p.padding = GridPadding::kReflection;
  else return invalid_argument("{}: unknown padding_mode '{}'", node.describe(), padding);
  p.align_corners = node.attr_int("align_corners", 0) != 0;
  p.height = x[2];
  p.width = x[3];
  return p;
}

namespace {

Status grid_sample_rule(InferContext& ctx) {
  const OptShape &x = ctx.input_shape(0), &grid = ctx.input_shape(1);
  if (x && x->size() != 4)
    return unsupported("{}: GridSample of a rank-{} input: only 4-D [N, C, H, W] inputs are supported",
                       ctx.node().describe(), x->size());
  if (grid && (grid->size() != 4 || ((*grid)[3].known() && (*grid)[3].value != 2)))
    return shape_error("{}: the grid must be [N, H_out, W_out, 2], got {}", ctx.node().describe(),
                       shape_to_string(grid));
  if (ctx.input_dtype(1) != ctx.input_dtype(0) && ctx.input_dtype(1) != DType::kUndefined &&
      ctx.input_dtype(0) != DType::kUndefined)
    return shape_error("{}: X is {} but the grid is {}", ctx.node().describe(), dtype_name(ctx.input_dtype(0)),
                       dtype_name(ctx.input_dtype(1)));
  if (!x || !grid) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  ctx.set_output(0, ctx.input_dtype(0), Shape{(*x)[0], (*x)[1], (*grid)[1], (*grid)[2]});
  return Status::Ok();
}

Status grid_sample_grad_rule(InferContext& ctx) {
  ctx.propagate(1, 0);
  if (ctx.num_outputs() > 1) ctx.propagate(2, 1);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "GridSample", 16, 1000, grid_sample_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "GridSampleGrad", 1, 1000, grid_sample_grad_rule, kPlainOp);

}  // namespace ort_train
