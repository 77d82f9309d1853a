// Shape rules of ScatterElements (and its opset-9 name Scatter), ScatterND and
// GatherND. The scatters keep the data's shape; GatherND returns
// indices.shape[:-1] + data.shape[batch_dims + k:] with k = indices.shape[-1].
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status scatter_rule(InferContext& ctx) {
  if (ctx.input_dtype(2) != ctx.input_dtype(0))
    return invalid_argument("{}: updates dtype {} differs from data dtype {}", ctx.node().describe(),
                            dtype_name(ctx.input_dtype(2)), dtype_name(ctx.input_dtype(0)));
  DType it = ctx.input_dtype(1);
  if (it != DType::kInt64 && it != DType::kInt32)
    return invalid_argument("{}: indices must be int32 or int64, got {}", ctx.node().describe(), dtype_name(it));
  return same_as_input0(ctx);
}

Status gather_nd_rule(InferContext& ctx) {
  const OptShape &data = ctx.input_shape(0), &idx = ctx.input_shape(1);
  int64_t b = ctx.attr_int("batch_dims", 0);
  if (!data || !idx || idx->empty() || !idx->back().known()) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  int64_t k = idx->back().value, r = static_cast<int64_t>(data->size());
  if (b < 0 || b + k > r || b >= static_cast<int64_t>(idx->size()))
    return shape_error("{}: index depth {} with batch_dims {} does not fit data of rank {}", ctx.node().describe(), k,
                       b, r);
  Shape out(idx->begin(), idx->end() - 1);
  out.insert(out.end(), data->begin() + b + k, data->end());
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

// com.ort_train GatherNDGrad(shape, indices, dY): zeros of the data's shape
// (the 1-D int64 `shape`) with dY's blocks added where GatherND read them.
Status gather_nd_grad_rule(InferContext& ctx) { return shape_from_value(ctx, 2, 0); }

}  // namespace

ORT_REGISTER_OP("", "Scatter", 9, 10, scatter_rule, kPlainOp);
ORT_REGISTER_OP("", "ScatterElements", 11, 1000, scatter_rule, kPlainOp);
ORT_REGISTER_OP("", "ScatterND", 11, 1000, scatter_rule, kPlainOp);
// com.ort_train ScatterElements: ONNX's of opset 18 (reduction none, add,
// mul, max, min) at any model opset; GatherElements' gradient scatter-adds
// with it, so that gradient needs no opset of the model's.
ORT_REGISTER_OP(kOrtTrainDomain, "ScatterElements", 1, 1000, scatter_rule, kPlainOp);
ORT_REGISTER_OP("", "GatherND", 11, 1000, gather_nd_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "GatherNDGrad", 1, 1000, gather_nd_grad_rule, kRuleReadsInput(0));

}  // namespace ort_train
