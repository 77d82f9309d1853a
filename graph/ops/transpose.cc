// Shape rule: Transpose (perm defaults to reversing the axes).
#include "graph/op_schema.h"

namespace ort_train {

// The permutation a Transpose node applies for a given rank.
Result<std::vector<int64_t>> transpose_perm(const Node& node, int64_t rank) {
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    return shape_error("{}: perm has {} entries for an input of rank {}", node.describe(), perm.size(), rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& p : perm) {
    ASSIGN_OR_RETURN(p, normalize_axis(p, rank, node));
    if (seen[p]) return shape_error("{}: perm repeats axis {}", node.describe(), p);
    seen[p] = true;
  }
  return perm;
}

namespace {
Status transpose_rule(InferContext& ctx) {
  const OptShape& in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(auto perm, transpose_perm(ctx.node(), static_cast<int64_t>(in->size())));
  Shape out;
  for (int64_t p : perm) out.push_back((*in)[p]);
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::Ok();
}
}  // namespace

ORT_REGISTER_OP("", "Transpose", 1, 1000, transpose_rule, kPlainOp | kSixteenBitInput(0));

}  // namespace ort_train
