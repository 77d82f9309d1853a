// Shape rules of the random ops: RandomUniform and RandomNormal (shape and
// dtype attributes, float32 by default), their *Like forms (the input's shape,
// its dtype unless `dtype` says otherwise) and Bernoulli (the probabilities'
// shape, their dtype unless `dtype`). Each draws from its node's own stream
// (runtime/dropout_seed.h), so constant folding never evaluates one.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Result<DType> drawn_dtype(InferContext& ctx, DType fallback) {
  const Attribute* a = ctx.node().attr("dtype");
  DType dt = a ? dtype_from_onnx(static_cast<int32_t>(a->i)) : fallback;
  if (dt == DType::kUndefined) return dt;
  bool bernoulli = ctx.node().op_type == "Bernoulli";
  bool ok = dt == DType::kFloat || dt == DType::kDouble ||
            (bernoulli && (dt == DType::kBool || dt == DType::kInt32 || dt == DType::kInt64));
  if (!ok) return unsupported("{}: {} draws into {}, which is not supported", ctx.node().describe(),
                              ctx.node().op_type, dtype_name(dt));
  return dt;
}

Status from_attributes(InferContext& ctx) {
  const Attribute* shape = ctx.node().attr("shape");
  if (!shape) return invalid_argument("{}: {} needs the 'shape' attribute", ctx.node().describe(), ctx.node().op_type);
  Shape out;
  for (int64_t d : shape->ints) {
    if (d < 0) return invalid_argument("{}: negative dim {} in 'shape'", ctx.node().describe(), d);
    out.emplace_back(d);
  }
  ASSIGN_OR_RETURN(DType dt, drawn_dtype(ctx, DType::kFloat));
  ctx.set_output(0, dt, std::move(out));
  return Status::Ok();
}

Status like_input(InferContext& ctx) {
  ASSIGN_OR_RETURN(DType dt, drawn_dtype(ctx, ctx.input_dtype(0)));
  ctx.set_output(0, dt, ctx.input_shape(0));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "RandomUniform", 1, 1000, from_attributes, kRandomOp | kReadsRunOptions);
ORT_REGISTER_OP("", "RandomNormal", 1, 1000, from_attributes, kRandomOp | kReadsRunOptions);
ORT_REGISTER_OP("", "RandomUniformLike", 1, 1000, like_input, kRandomOp | kReadsRunOptions);
ORT_REGISTER_OP("", "RandomNormalLike", 1, 1000, like_input, kRandomOp | kReadsRunOptions);
ORT_REGISTER_OP("", "Bernoulli", 15, 1000, like_input, kRandomOp | kReadsRunOptions);

}  // namespace ort_train
