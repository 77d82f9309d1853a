// Shape rules: Gather (out = data[:axis] + indices + data[axis+1:]) and GatherElements (out = indices' shape).
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status gather_rule(InferContext& ctx) {
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
  const OptShape &data = ctx.input_shape(0), &idx = ctx.input_shape(1);
  if (data && idx && data->size() != idx->size())
    return shape_error("{}: indices rank {} differs from data rank {}", ctx.node().describe(), idx->size(), data->size());
  ctx.set_output(0, ctx.input_dtype(0), idx);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Gather", 1, 1000, gather_rule);
ORT_REGISTER_OP("", "GatherElements", 11, 1000, gather_elements_rule);

}  // namespace ort_train
