// Shape rules: LayerNormalization (Y, optional Mean and InvStdDev with the
// normalized dims set to 1), SimplifiedLayerNormalization (Y, optional InvStdDev) and BatchNormalization (Y, and in training mode the
// updated running mean and variance).
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

Status layer_norm_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  ctx.propagate(0, 0);
  if (!x) {
    for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, DType::kFloat, std::nullopt);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(x->size());
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", -1), rank, ctx.node()));
  Shape stat = *x;
  for (int64_t d = axis; d < rank; ++d) stat[d] = Dim(1);
  DType stash = dtype_from_onnx(static_cast<int32_t>(ctx.attr_int("stash_type", 1)));
  if (ctx.input_dtype(0) == DType::kDouble) stash = DType::kDouble;
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, stash, stat);
  return Status::Ok();
}

Status batch_norm_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  if (x && x->size() < 2) return shape_error("{}: input must be [N, C, ...]", ctx.node().describe());
  if (x)
    for (size_t k = 1; k < 5; ++k)
      RETURN_IF_ERROR(require_elements(ctx, k, (*x)[1], "scale, B, mean and var (one per channel)"));
  ctx.propagate(0, 0);
  OptShape c = x ? OptShape(Shape{(*x)[1]}) : std::nullopt;
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_dtype(0), c);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "LayerNormalization", 17, 1000, layer_norm_rule, kPlainOp);
// The same op at any opset: what layer_norm_fusion writes (graph/passes/).
ORT_REGISTER_OP(kOrtTrainDomain, "LayerNormalization", 1, 1000, layer_norm_rule, kPlainOp);
// RMSNorm (rms_norm_fusion's; ONNX Runtime's contrib op): Y, and optionally InvStdDev.
ORT_REGISTER_OP(kOrtTrainDomain, "SimplifiedLayerNormalization", 1, 1000, layer_norm_rule, kPlainOp);
// In training, outputs 1 and 2 are the next running mean and variance (inputs 3 and 4).
ORT_REGISTER_STATEFUL_OP("", "BatchNormalization", 7, 1000, batch_norm_rule, kTrainingStateOp, {1, 3}, {2, 4});

}  // namespace ort_train
