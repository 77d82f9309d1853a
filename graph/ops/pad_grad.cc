// Shape rule of PadGrad(dY, shape) -> dX (com.ort_train): the shape given by
// input 1's value. Kernel in runtime/cpu/kernels/pad_grad.cc.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

// dY must be X's shape grown by the forward's pads (attribute `pads`, begins then ends).
Status rule(InferContext& ctx) {
  RETURN_IF_ERROR(shape_from_value(ctx, 0, 1));
  const OptShape &dx = ctx.output(0).shape, &dy = ctx.input_shape(0);
  if (!dx || !dy) return Status::Ok();
  std::vector<int64_t> pads = ctx.attr_ints("pads");
  size_t rank = dx->size();
  if (pads.size() != 2 * rank || dy->size() != rank)
    return shape_error("{}: {} pads and dY {} for X {}", ctx.node().describe(), pads.size(), shape_to_string(dy),
                       shape_to_string(dx));
  for (size_t d = 0; d < rank; ++d) {
    const Dim &x = (*dx)[d], &y = (*dy)[d];
    int64_t grown = 0;
    if (x.known() && y.known() &&
        (__builtin_add_overflow(x.value, pads[d], &grown) || __builtin_add_overflow(grown, pads[d + rank], &grown) ||
         grown != y.value))
      return shape_error("{}: dY {} is not X {} padded by {}", ctx.node().describe(), shape_to_string(dy),
                         shape_to_string(dx), fmt::format("{}", fmt::join(pads, ",")));
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "PadGrad", 1, 1000, rule, kRuleReadsInput(1));

}  // namespace ort_train
