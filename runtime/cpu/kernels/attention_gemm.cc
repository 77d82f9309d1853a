// The "gemm" candidate of the CPU's Attention and AttentionGrad
// (attention.h): per key/value head (b, kh), the heads reading it are one
// [group * T, D] block of Q rows (heads h = kh * group .. are adjacent in
// Q's [B, H, T, D] layout), so each product is one GEMM over the whole group:
//   forward:  X = scale Q K^T [group*T, S]; rows -> dropped probabilities
//             (attention_rows.h); O = X V.
//   backward: X = scale Q K^T, Y = dO V^T; rows -> X dropped probabilities,
//             Y score gradient; dV = X^T dO, dQ = scale Y K, dK = scale Y^T Q.
// dK and dV sum over the group's heads inside their GEMM. 16-bit operands
// (attention_gemm_half): the same on float32 copies, with X (the dropped
// probabilities) and Y (the score gradient) rounded to 16 bits before the
// GEMMs that read them, as the CUDA kernel's 16-bit GEMMs read them. The
// scores and dO V^T stay float32: FlashAttention's rounding points (a tiled
// 16-bit kernel keeps its score tile in float32 registers), so such a kernel
// can be a candidate of the same computation. PyTorch's eager attention,
// written as matmuls, also rounds the scores; the bundled models' parity with
// it is as close either way (measured, docs/benchmarks.md). Work is split over
// the (b, kh) groups, or, with fewer groups than threads, each GEMM is
// threaded by the BLAS: a GEMM splits M and N, never K, so the thread count
// never changes a bit.
#include <vector>

#include "cuda_kernels/attention_rows.h"
#include "graph/dispatch.h"
#include "runtime/cpu/batched_gemm.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/half_convert.h"
#include "runtime/cpu/kernels/attention.h"
#include "runtime/cpu/parallel.h"

namespace ort_train {
namespace {

// X [rows, S] = scale * Q K^T for group bk (K read as [S, D] or, k_transposed, [D, S]).
template <typename T>
void group_scores(const AttentionGeometry& g, const Operands<T>& in, int64_t bk, T* x) {
  int64_t rows = attention_group_rows(g), S = g.keys, D = g.head_size;
  const T* q = in.q + bk * rows * D;
  const T* k = in.k + bk * S * D;
  gemm(false, !g.k_transposed, rows, S, D, static_cast<T>(g.scale), q, D, k, g.k_transposed ? S : D, T(0), x, S);
}

// Rounds a [rows, S] block in place where a 16-bit GEMM would read it (the
// 16-bit kernels below); null for float32 and float64 operands.
template <typename T>
using RoundBlock = void (*)(T*, int64_t);

template <typename T>
void forward_group(const AttentionGeometry& g, const Operands<T>& in, int64_t bk, T* x, T* out, T* lse,
                   RoundBlock<T> round = nullptr) {
  int64_t rows = attention_group_rows(g), S = g.keys, Dv = g.value_size;
  group_scores(g, in, bk, x);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t row = bk * rows + i;
    T* xr = x + i * S;
    T shift = attention_row_shift(attention_row_scores<T>(g, in.bias, in.mask, row, xr, 0, 1));
    T sum = attention_row_exp<T>(g, xr, shift, 0, 1);
    attention_row_probs<T>(g, row, xr, sum, 0, 1);
    lse[row] = attention_row_lse(shift, sum);
  }
  if (round) round(x, rows * S);
  gemm(false, false, rows, Dv, S, T(1), x, S, in.v + bk * S * Dv, Dv, T(0), out + bk * rows * Dv, Dv);
}

template <typename T>
void backward_group(const AttentionGeometry& g, const Operands<T>& in, const T* dout, const T* out, const T* lse,
                    int64_t bk, const GradOutputs<T>& grads, T* x, T* y, RoundBlock<T> round = nullptr) {
  int64_t rows = attention_group_rows(g), S = g.keys, D = g.head_size, Dv = g.value_size;
  T scale = static_cast<T>(g.scale);
  const T* q = in.q + bk * rows * D;
  const T* k = in.k + bk * S * D;
  const T* v = in.v + bk * S * Dv;
  const T* dog = dout + bk * rows * Dv;
  group_scores(g, in, bk, x);
  gemm(false, true, rows, S, Dv, T(1), dog, Dv, v, Dv, T(0), y, S);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t row = bk * rows + i;
    T dot = attention_row_dot(dout + row * Dv, out + row * Dv, Dv, 0, 1);
    attention_row_grad<T>(g, in.bias, in.mask, row, lse[row], dot, x + i * S, y + i * S,
                          grads.dscores ? grads.dscores + row * S : nullptr, 0, 1);
  }
  if (round) {
    round(x, rows * S);
    round(y, rows * S);
  }
  gemm(true, false, S, Dv, rows, T(1), x, S, dog, Dv, T(0), grads.dv + bk * S * Dv, Dv);
  gemm(false, g.k_transposed, rows, D, S, scale, y, S, k, g.k_transposed ? S : D, T(0), grads.dq + bk * rows * D, D);
  if (g.k_transposed)  // dK [D, S] = scale Q^T Y
    gemm(true, false, D, S, rows, scale, q, D, y, S, T(0), grads.dk + bk * S * D, S);
  else  // dK [S, D] = scale Y^T Q
    gemm(true, false, S, D, rows, scale, y, S, q, D, T(0), grads.dk + bk * S * D, D);
}

// Runs fn(bk, x, y) over every group with [rows, S] scratch blocks x and y.
template <typename T, typename F>
void for_each_group(const AttentionGeometry& g, bool two_blocks, F&& fn) {
  int64_t groups = g.batch * g.kv_heads, block = attention_group_rows(g) * g.keys;
  for_each_gemm(groups, block * g.head_size, [&](int64_t first, int64_t last) {
    std::vector<T> x(static_cast<size_t>(block)), y(two_blocks ? static_cast<size_t>(block) : 0);
    for (int64_t bk = first; bk < last; ++bk) fn(bk, x.data(), y.data());
  });
}

template <DType Half>
void round_block(float* x, int64_t n) {
  round_to_half(Half, x, n);
}

RoundBlock<float> rounding_for(DType half) {
  return half == DType::kBFloat16 ? round_block<DType::kBFloat16> : round_block<DType::kFloat16>;
}

// Input i widened to a float32 tensor.
Tensor widened(KernelContext& ctx, size_t i) {
  Tensor f = ctx.allocate(DType::kFloat, ctx.input(i).dims());
  widen_half(ctx.input(i), f);
  return f;
}

// Q, K, V widened (kept in `wide`), the float32 bias and the mask, from input q on.
Operands<float> widened_operands(KernelContext& ctx, size_t q, size_t bias, std::vector<Tensor>& wide) {
  for (size_t i = q; i < q + 3; ++i) wide.push_back(widened(ctx, i));
  return {wide[0].data<float>(), wide[1].data<float>(), wide[2].data<float>(),
          ctx.has_input(bias) ? ctx.input(bias).data<float>() : nullptr,
          ctx.has_input(bias + 1) ? ctx.input(bias + 1).data<bool>() : nullptr};
}

}  // namespace

Status attention_gemm_half(KernelContext& ctx) {
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  if (attention_has_empty_size(g))
    return unsupported("{}: 16-bit attention with an empty dimension is not supported", ctx.node().describe());
  DType half = ctx.input(0).dtype();
  std::vector<Tensor> wide;
  wide.reserve(3);
  Operands<float> in = widened_operands(ctx, 0, 3, wide);
  Tensor& out = ctx.output(0);
  Tensor out32 = ctx.allocate(DType::kFloat, out.dims());
  Tensor lse = ctx.has_output(1) ? ctx.output(1) : ctx.allocate(DType::kFloat, {g.batch, g.heads, g.queries});
  RoundBlock<float> round = rounding_for(half);
  for_each_group<float>(g, false, [&](int64_t bk, float* x, float*) {
    forward_group<float>(g, in, bk, x, out32.data<float>(), lse.data<float>(), round);
  });
  narrow_to_half(out32, out);
  return Status::Ok();
}

Status attention_grad_gemm_half(KernelContext& ctx) {
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  if (attention_has_empty_size(g))
    return unsupported("{}: 16-bit attention with an empty dimension is not supported", ctx.node().describe());
  DType half = ctx.input(1).dtype();
  std::vector<Tensor> wide;
  wide.reserve(5);
  Operands<float> in = widened_operands(ctx, 1, 6, wide);
  Tensor dout = widened(ctx, 0), out = widened(ctx, 4);
  Tensor *dq = &ctx.output(0), *dk = &ctx.output(1), *dv = &ctx.output(2);
  Tensor* dscores = ctx.has_output(3) ? &ctx.output(3) : nullptr;
  Tensor dq32 = ctx.allocate(DType::kFloat, dq->dims()), dk32 = ctx.allocate(DType::kFloat, dk->dims()),
         dv32 = ctx.allocate(DType::kFloat, dv->dims());
  GradOutputs<float> grads{dq32.data<float>(), dk32.data<float>(), dv32.data<float>(),
                           dscores ? dscores->data<float>() : nullptr};
  RoundBlock<float> round = rounding_for(half);
  const float* lse = ctx.input(5).data<float>();
  for_each_group<float>(g, true, [&](int64_t bk, float* x, float* y) {
    backward_group<float>(g, in, dout.data<float>(), out.data<float>(), lse, bk, grads, x, y, round);
  });
  narrow_to_half(dq32, *dq);
  narrow_to_half(dk32, *dk);
  narrow_to_half(dv32, *dv);
  return Status::Ok();
}

Status attention_gemm(KernelContext& ctx) {
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  if (attention_has_empty_size(g)) return attention_flash(ctx);  // BLAS refuses a leading dimension of 0
  return with_forward_args(ctx, g, [&](const auto& a) {
    using T = typename std::decay_t<decltype(a)>::Value;
    for_each_group<T>(g, false, [&](int64_t bk, T* x, T*) { forward_group<T>(g, a.in, bk, x, a.out, a.lse); });
  });
}

Status attention_grad_gemm(KernelContext& ctx) {
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  if (attention_has_empty_size(g)) return attention_grad_flash(ctx);  // BLAS refuses a leading dimension of 0
  return with_grad_args(ctx, [&](const auto& a) {
    using T = typename std::decay_t<decltype(a)>::Value;
    for_each_group<T>(g, true, [&](int64_t bk, T* x, T* y) {
      backward_group<T>(g, a.in, a.dout, a.out, a.lse, bk, a.grads, x, y);
    });
  });
}

}  // namespace ort_train
