// Shape rule of ReverseSequence(input, sequence_lens): the input's shape;
// batch_axis and time_axis are 0 and 1 in either order.
#include "graph/ops/reverse_sequence.h"

#include "graph/op_schema.h"

namespace ort_train {

Result<ReverseSequenceView> reverse_sequence_view(const Node& node, const Dims& x, const Tensor& lens) {
  if (x.size() < 2) return shape_error("{}: needs an input of rank >= 2", node.describe());
  ReverseSequenceView v;
  v.batch_major = node.attr_int("batch_axis", 1) == 0;
  v.d0 = x[0];
  v.d1 = x[1];
  v.inner = 1;
  for (size_t i = 2; i < x.size(); ++i) v.inner *= x[i];
  const int64_t batch = v.batch_major ? v.d0 : v.d1, steps = v.batch_major ? v.d1 : v.d0;
  v.lens = lens.to_int64_vector();
  if (static_cast<int64_t>(v.lens.size()) != batch)
    return shape_error("{}: sequence_lens has {} entries for a batch of {}", node.describe(), v.lens.size(), batch);
  for (int64_t l : v.lens)
    if (l < 0 || l > steps) return invalid_argument("{}: sequence length {} outside [0, {}]", node.describe(), l, steps);
  return v;
}
namespace {

Status reverse_sequence_rule(InferContext& ctx) {
  const int64_t b = ctx.attr_int("batch_axis", 1), t = ctx.attr_int("time_axis", 0);
  if (!((b == 0 && t == 1) || (b == 1 && t == 0)))
    return invalid_argument("{}: batch_axis and time_axis must be 0 and 1, got {} and {}", ctx.node().describe(), b, t);
  const OptShape& x = ctx.input_shape(0);
  if (x && x->size() < 2) return shape_error("{}: needs an input of rank >= 2", ctx.node().describe());
  ctx.propagate(0, 0);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "ReverseSequence", 10, 1000, reverse_sequence_rule, kPlainOp);

}  // namespace ort_train
