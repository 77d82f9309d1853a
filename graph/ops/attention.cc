// Shape rules of com.ort_train Attention (attention_fusion's) and its
// gradient AttentionGrad.
//
// Attention(Q, K, V[, bias][, mask]) -> (O, LSE), every tensor 4-D:
//   Q [B, H, T, D]; K [B, Hk, S, D] ([B, Hk, D, S] with k_transposed=1);
//   V [B, Hk, S, Dv]; H a multiple of Hk (grouped-query attention: head h
//   reads key/value head h / (H / Hk)); bias (float) and mask (bool) each
//   broadcast to [B, H, T, S].
//   scores = scale * Q K^T; where mask == mask_fill_when, scores = mask_fill;
//   scores += bias; P = softmax over S; P dropped with dropout_ratio;
//   O = P V [B, H, T, Dv]; LSE = log-sum-exp of each row of scores [B, H, T],
//   which is all the gradient keeps of P.
// AttentionGrad(dO, Q, K, V, O, LSE[, bias][, mask]) -> (dQ, dK, dV[, dScores]):
//   dScores (of [B, H, T, S]) only when the bias needs a gradient.
// Q, K, V (and O, dO, dQ, dK, dV) are float32, float64, or 16-bit
// (half_activations' attention, PyTorch autocast's scaled_dot_product_attention):
// then the bias, LSE and dScores are float32, and the scores and their softmax
// are computed in float32; the probabilities and the score gradient are
// rounded to 16 bits where a 16-bit GEMM reads them.
#include "graph/op_schema.h"

namespace ort_train {
namespace {

bool same_dim(const Dim& a, const Dim& b) { return !a.known() || !b.known() || a.value == b.value; }

// Checks the operands' ranks, dtypes and agreeing dims; returns [B, H, T, S].
Result<OptShape> check_operands(InferContext& ctx, size_t q, const char* op) {
  DType dt = ctx.input_dtype(q);
  if (dt != DType::kFloat && dt != DType::kDouble && !dtype_is_half(dt) && dt != DType::kUndefined)
    return shape_error("{}: {} takes float32, float64, float16 or bfloat16, got {}", ctx.node().describe(), op,
                       dtype_name(dt));
  for (size_t i = q + 1; i < q + 3; ++i)
    if (ctx.input_dtype(i) != dt && ctx.input_dtype(i) != DType::kUndefined && dt != DType::kUndefined)
      return shape_error("{}: input {} is {}, Q {}", ctx.node().describe(), i, dtype_name(ctx.input_dtype(i)),
                         dtype_name(dt));
  const OptShape &qs = ctx.input_shape(q), &ks = ctx.input_shape(q + 1), &vs = ctx.input_shape(q + 2);
  for (size_t i = q; i < q + 3; ++i)
    if (ctx.input_rank(i) != -1 && ctx.input_rank(i) != 4)
      return shape_error("{}: {} takes 4-D Q, K, V ([batch, heads, seq, head size]), input {} is {}",
                         ctx.node().describe(), op, i, shape_to_string(ctx.input_shape(i)));
  if (!qs || !ks || !vs) return OptShape{};
  bool kt = ctx.attr_int("k_transposed", 0) != 0;
  const Dim &kd = (*ks)[kt ? 2 : 3], &kseq = (*ks)[kt ? 3 : 2];
  bool ok = same_dim((*qs)[0], (*ks)[0]) && same_dim((*qs)[0], (*vs)[0]) && same_dim((*ks)[1], (*vs)[1]) &&
            same_dim((*qs)[3], kd) && same_dim(kseq, (*vs)[2]);
  const Dim &h = (*qs)[1], &hk = (*ks)[1];
  if (h.known() && hk.known() && (hk.value == 0 || h.value % hk.value != 0)) ok = false;
  if (!ok)
    return shape_error("{}: {} needs Q [B, H, T, D], K {} and V [B, Hk, S, Dv] with H a multiple of Hk, got {}, {}, {}",
                       ctx.node().describe(), op, kt ? "[B, Hk, D, S]" : "[B, Hk, S, D]", shape_to_string(qs),
                       shape_to_string(ks), shape_to_string(vs));
  return OptShape{Shape{(*qs)[0], h, (*qs)[2], kseq}};
}

// The dtype the scores, LSE, bias and dScores have for operands of `dt`:
// float32 for 16-bit operands, else dt.
DType score_dtype(DType dt) { return dtype_is_half(dt) ? DType::kFloat : dt; }

// The optional bias (the scores' dtype) and mask (bool) must broadcast to the scores.
Status check_bias_and_mask(InferContext& ctx, size_t q, size_t bias, const OptShape& scores) {
  DType want = score_dtype(ctx.input_dtype(q));
  if (ctx.has_input(bias) && ctx.input_dtype(bias) != want && ctx.input_dtype(bias) != DType::kUndefined &&
      ctx.input_dtype(q) != DType::kUndefined)
    return shape_error("{}: the bias is {}, the scores {}", ctx.node().describe(),
                       dtype_name(ctx.input_dtype(bias)), dtype_name(want));
  if (ctx.has_input(bias + 1) && ctx.input_dtype(bias + 1) != DType::kBool &&
      ctx.input_dtype(bias + 1) != DType::kUndefined)
    return shape_error("{}: the mask must be bool, got {}", ctx.node().describe(),
                       dtype_name(ctx.input_dtype(bias + 1)));
  for (size_t i = bias; i < bias + 2; ++i) {
    if (!ctx.has_input(i) || !ctx.input_shape(i) || !scores) continue;
    const Shape& s = *ctx.input_shape(i);
    if (s.size() > 4) return shape_error("{}: input {} has rank {} > 4", ctx.node().describe(), i, s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      const Dim& want = (*scores)[4 - s.size() + d];
      if (s[d].known() && s[d].value != 1 && want.known() && s[d].value != want.value)
        return shape_error("{}: input {} {} does not broadcast to the scores {}", ctx.node().describe(), i,
                           shape_to_string(s), shape_to_string(scores));
    }
  }
  return Status::Ok();
}

Status attention_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(OptShape scores, check_operands(ctx, 0, "Attention"));
  RETURN_IF_ERROR(check_bias_and_mask(ctx, 0, 3, scores));
  DType dt = ctx.input_dtype(0);
  const OptShape &q = ctx.input_shape(0), &v = ctx.input_shape(2);
  if (q && v) ctx.set_output(0, dt, Shape{(*q)[0], (*q)[1], (*q)[2], (*v)[3]});
  else ctx.set_output(0, dt, std::nullopt);
  if (q) ctx.set_output(1, score_dtype(dt), Shape{(*q)[0], (*q)[1], (*q)[2]});
  else ctx.set_output(1, score_dtype(dt), std::nullopt);
  return Status::Ok();
}

Status attention_grad_rule(InferContext& ctx) {
  ASSIGN_OR_RETURN(OptShape scores, check_operands(ctx, 1, "AttentionGrad"));
  RETURN_IF_ERROR(check_bias_and_mask(ctx, 1, 6, scores));
  DType dt = ctx.input_dtype(1);
  for (size_t i = 0; i < 3; ++i) ctx.set_output(i, dt, ctx.input_shape(1 + i));
  ctx.set_output(3, score_dtype(dt), scores);
  return Status::Ok();
}

}  // namespace

// Q, K and V in 16 bits; the bias and mask stay float32 (scores and softmax are float32 inside).
ORT_REGISTER_OP(kOrtTrainDomain, "Attention", 1, 1000, attention_rule,
                kReadsRunOptions | kSixteenBitInput(0) | kSixteenBitInput(1) | kSixteenBitInput(2));
ORT_REGISTER_OP(kOrtTrainDomain, "AttentionGrad", 1, 1000, attention_grad_rule, kReadsRunOptions);

}  // namespace ort_train
