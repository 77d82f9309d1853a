// Shape rules of AffineGrid(theta [N, 2, 3] or [N, 3, 4], size) (opset 20)
// -> grid [N, H, W, 2] or [N, D, H, W, 3], and of its gradient op
// com.ort_train AffineGridGrad(dGrid, size) -> dTheta, shaped like theta.
// Both read `size`, the [N, C, (D,) H, W] of the image the grid samples.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Result<std::optional<Dims>> size_value(const InferContext& ctx, size_t i) {
  const Tensor* v = ctx.input_value(i);
  if (!v) return std::optional<Dims>();
  if (v->dtype() != DType::kInt64 || (v->numel() != 4 && v->numel() != 5))
    return shape_error("{}: size must be 4 or 5 int64 values [N, C, (D,) H, W]", ctx.node().describe());
  Dims d = v->to_int64_vector();
  for (int64_t x : d)
    if (x < 0) return shape_error("{}: size {} has a negative dim", ctx.node().describe(), dims_to_string(d));
  return std::optional<Dims>(d);
}

Status affine_grid_rule(InferContext& ctx) {
  const OptShape& theta = ctx.input_shape(0);
  if (theta && theta->size() != 3)
    return shape_error("{}: theta must be [N, 2, 3] or [N, 3, 4], got {}", ctx.node().describe(),
                       shape_to_string(theta));
  ASSIGN_OR_RETURN(std::optional<Dims> size, size_value(ctx, 1));
  if (!size) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  const int64_t k = static_cast<int64_t>(size->size()) - 2;  // spatial dims
  if (theta && (((*theta)[1].known() && (*theta)[1].value != k) || ((*theta)[2].known() && (*theta)[2].value != k + 1)))
    return shape_error("{}: a size of {} spatial dims needs theta [N, {}, {}], got {}", ctx.node().describe(), k, k,
                       k + 1, shape_to_string(theta));
  Shape out{Dim((*size)[0])};
  for (size_t i = 2; i < size->size(); ++i) out.push_back(Dim((*size)[i]));
  out.push_back(Dim(k));
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status affine_grid_grad_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(std::optional<Dims> size, size_value(ctx, 1));
  if (!size) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  const int64_t k = static_cast<int64_t>(size->size()) - 2;
  ctx.set_output(0, ctx.input_dtype(0), Shape{Dim((*size)[0]), Dim(k), Dim(k + 1)});
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "AffineGrid", 20, 1000, affine_grid_rule, kRuleReadsInput(1));
ORT_REGISTER_OP(kOrtTrainDomain, "AffineGridGrad", 1, 1000, affine_grid_grad_rule, kRuleReadsInput(1));

}  // namespace ort_train
