// Shape rule of ArgMax and ArgMin: the int64 index of the extreme along `axis`
// (default 0), that dim kept as 1 unless keepdims = 0.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status arg_reduce_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, DType::kInt64, std::nullopt);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  if (rank == 0) return shape_error("{}: {} needs an input of rank >= 1", ctx.node().describe(), ctx.node().op_type);
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", 0), rank, ctx.node()));
  bool keep = ctx.attr_int("keepdims", 1) != 0;
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) out.push_back((*in)[static_cast<size_t>(d)]);
    else if (keep) out.emplace_back(1);
  }
  ctx.set_output(0, DType::kInt64, std::move(out));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "ArgMax", 1, 1000, arg_reduce_rule, kPlainOp);
ORT_REGISTER_OP("", "ArgMin", 1, 1000, arg_reduce_rule, kPlainOp);

}  // namespace ort_train
