// Shape rules: MatMul (numpy semantics: 1-D operands promoted then squeezed,
// batch dims broadcast), Gemm (2-D, optional transposes, C broadcast to [M,N])
// and com.ort_train FusedMatMul (matmul_transpose_fusion's and
// matmul_scale_fusion's: alpha * A' @ B', where A' is A with its last two
// dims swapped when transA is set, B' likewise; rank >= 2, batch dims
// broadcast; matmul_add_fusion's optional third input, a 1-D bias of the
// output's last dim, added to every row).
#include "graph/op_schema.h"
#include "graph/operand_checks.h"

namespace ort_train {
namespace {

Status matmul_shapes(InferContext& ctx, Shape sa, Shape sb);

Status matmul_rule(InferContext& ctx) {
  const OptShape &a = ctx.input_shape(0), &b = ctx.input_shape(1);
  DType dt = ctx.input_dtype(0);
  if (!a || !b) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  if (a->empty() || b->empty()) return shape_error("{}: MatMul operands must have rank >= 1", ctx.node().describe());
  return matmul_shapes(ctx, *a, *b);
}

Status fused_matmul_rule(InferContext& ctx) {
  const OptShape &a = ctx.input_shape(0), &b = ctx.input_shape(1);
  DType dt = ctx.input_dtype(0);
  if (dt != DType::kFloat && dt != DType::kDouble && !dtype_is_half(dt) && dt != DType::kUndefined)
    return shape_error("{}: FusedMatMul takes float32, float64, float16 or bfloat16, got {}", ctx.node().describe(),
                       dtype_name(dt));
  if (!a || !b) {
    ctx.set_output(0, dt, std::nullopt);
    return Status::Ok();
  }
  if (a->size() < 2 || b->size() < 2)
    return shape_error("{}: FusedMatMul operands must have rank >= 2", ctx.node().describe());
  Shape sa = *a, sb = *b;
  if (ctx.attr_int("transA", 0)) std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
  if (ctx.attr_int("transB", 0)) std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
  RETURN_IF_ERROR(matmul_shapes(ctx, std::move(sa), std::move(sb)));
  if (!ctx.has_input(2)) return Status::Ok();
  const OptShape& bias = ctx.input_shape(2);
  const Dim& n = ctx.output(0).shape->back();
  if (ctx.input_dtype(2) != dt && ctx.input_dtype(2) != DType::kUndefined)
    return shape_error("{}: the bias is {}, the operands {}", ctx.node().describe(), dtype_name(ctx.input_dtype(2)),
                       dtype_name(dt));
  if (bias && (bias->size() != 1 || ((*bias)[0].known() && n.known() && (*bias)[0].value != n.value)))
    return shape_error("{}: the bias must be 1-D of the output's last dim {}, got {}", ctx.node().describe(),
                       n.to_string(), shape_to_string(bias));
  return Status::Ok();
}

// The output of A @ B for shapes already transposed as the op reads them.
Status matmul_shapes(InferContext& ctx, Shape sa, Shape sb) {
  DType dt = ctx.input_dtype(0);
  const OptShape &a = ctx.input_shape(0), &b = ctx.input_shape(1);
  bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), Dim(1));
  if (b1) sb.push_back(Dim(1));
  const Dim &ka = sa.back(), &kb = sb[sb.size() - 2];
  if (ka.known() && kb.known() && ka.value != kb.value)
    return shape_error("{}: inner dimensions differ: {} x {}", ctx.node().describe(), shape_to_string(a), shape_to_string(b));
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  ASSIGN_OR_RETURN(Shape out, broadcast_shapes({&ba, &bb}, ctx.node()));
  if (!a1) out.push_back(sa[sa.size() - 2]);
  if (!b1) out.push_back(sb.back());
  ctx.set_output(0, dt, std::move(out));
  return Status::Ok();
}

Status gemm_rule(InferContext& ctx) {
  const OptShape &a = ctx.input_shape(0), &b = ctx.input_shape(1);
  DType dt = ctx.input_dtype(0);
  if (!a || !b) {
    ctx.set_output(0, dt, Shape{Dim(), Dim()});
    return Status::Ok();
  }
  if (a->size() != 2 || b->size() != 2) return shape_error("{}: Gemm operands must be 2-D", ctx.node().describe());
  bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  Dim m = (*a)[ta ? 1 : 0], ka = (*a)[ta ? 0 : 1], kb = (*b)[tb ? 1 : 0], n = (*b)[tb ? 0 : 1];
  if (ka.known() && kb.known() && ka.value != kb.value)
    return shape_error("{}: inner dimensions differ ({} vs {})", ctx.node().describe(), ka.value, kb.value);
  RETURN_IF_ERROR(require_broadcasts_to(ctx, 2, Shape{m, n}, "C"));
  ctx.set_output(0, dt, Shape{m, n});
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "MatMul", 1, 1000, matmul_rule, kPlainOp);
ORT_REGISTER_OP("", "Gemm", 7, 1000, gemm_rule, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "FusedMatMul", 1, 1000, fused_matmul_rule, kPlainOp);

}  // namespace ort_train
