// Shape rules: Gather (out = data[:axis] + indices + data[axis+1:]) and GatherElements (out = indices' shape).
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status check_index_dtype(const InferContext& ctx) {
  DType t = ctx.input_dtype(1);
  if (t != DType::kUndefined && t != DType::kInt32 && t != DType::kInt64)
    return invalid_argument("{}: indices must be int32 or int64, not {}", ctx.node().describe(), dtype_name(t));
  return Status::Ok();
}

Status gather_rule(InferContext& ctx) {
  RETURN_IF_ERROR(check_index_dtype(ctx));
  const OptShape &data = ctx.input_shape(0), &idx = ctx.input_shape(1);
  if (!data || !idx) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(data->size());
  if (rank == 0) return shape_error("{}: data must have rank >= 1", ctx.node().describe());
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", 0), rank, ctx.node()));
  Shape out(data->begin(), data->begin() + axis);
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + axis + 1, data->end());
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}

Status gather_elements_rule(InferContext& ctx) {
  RETURN_IF_ERROR(check_index_dtype(ctx));
  const OptShape &data = ctx.input_shape(0), &idx = ctx.input_shape(1);
  if (data && idx) {
    int64_t rank = static_cast<int64_t>(data->size());
    if (rank == 0) return shape_error("{}: data must have rank >= 1", ctx.node().describe());
    if (idx->size() != data->size())
      return shape_error("{}: indices rank {} differs from data rank {}", ctx.node().describe(), idx->size(), rank);
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.attr_int("axis", 0), rank, ctx.node()));
    // Off the axis, indices address data positions directly, so they must fit inside it.
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && (*idx)[d].known() && (*data)[d].known() && (*idx)[d].value > (*data)[d].value)
        return shape_error("{}: indices dim {} has size {}, larger than data's {}", ctx.node().describe(), d,
                           (*idx)[d].value, (*data)[d].value);
  }
  ctx.set_output(0, ctx.input_dtype(0), idx);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Gather", 1, 1000, gather_rule, kPlainOp);
ORT_REGISTER_OP("", "GatherElements", 11, 1000, gather_elements_rule, kPlainOp);

}  // namespace ort_train
