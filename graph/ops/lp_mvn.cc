// Shape rules of LpNormalization, MeanVarianceNormalization (the input's shape
// and dtype) and of their gradients com.ort_train LpNormalizationGrad and
// MeanVarianceNormalizationGrad (dY, X) -> dX; the row tables their kernels share.
#include "graph/ops/lp_mvn.h"

#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {

Result<NormalizedRows> normalized_rows(const Node& node, const Dims& dims, bool mvn) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> normalized(static_cast<size_t>(rank), false);
  NormalizedRows r;
  if (mvn) {
    std::vector<int64_t> axes = node.attr_ints("axes", {0, 2, 3});
    for (int64_t a : axes) {
      ASSIGN_OR_RETURN(int64_t ax, normalize_axis(a, rank, node));
      normalized[static_cast<size_t>(ax)] = true;
    }
  } else {
    r.p = static_cast<int>(node.attr_int("p", 2));
    if (r.p != 1 && r.p != 2) return invalid_argument("{}: p must be 1 or 2, got {}", node.describe(), r.p);
    ASSIGN_OR_RETURN(int64_t ax, normalize_axis(node.attr_int("axis", -1), std::max<int64_t>(rank, 1), node));
    if (rank > 0) normalized[static_cast<size_t>(ax)] = true;
  }
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int64_t d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  r.base = {0};
  r.row = {0};
  for (int64_t d = 0; d < rank; ++d) {
    std::vector<int64_t>& t = normalized[static_cast<size_t>(d)] ? r.row : r.base;
    std::vector<int64_t> next;
    next.reserve(t.size() * static_cast<size_t>(dims[d]));
    for (int64_t o : t)
      for (int64_t i = 0; i < dims[d]; ++i) next.push_back(o + i * strides[d]);
    t.swap(next);
  }
  return r;
}

namespace {

Status normalize_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (dt != DType::kFloat && dt != DType::kDouble && dt != DType::kUndefined)
    return unsupported("{}: {} takes float32 or float64, got {}", ctx.node().describe(), ctx.node().op_type,
                       dtype_name(dt));
  ctx.propagate(0, 0);
  return Status::Ok();
}

// (dY, X): the kernel reads dY as X's type, element for element.
Status grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_dtype(ctx, 0));
  RETURN_IF_ERROR(require_same_shape(ctx, 0, 1, "dY"));
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(1));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "LpNormalization", 1, 1000, normalize_rule, kPlainOp);
ORT_REGISTER_OP("", "MeanVarianceNormalization", 9, 1000, normalize_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "LpNormalizationGrad", 1, 1000, grad_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "MeanVarianceNormalizationGrad", 1, 1000, grad_rule, kPlainOp);

}  // namespace ort_train
