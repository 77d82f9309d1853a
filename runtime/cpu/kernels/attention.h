// The CPU's two implementations of com.ort_train Attention and AttentionGrad
// (semantics in graph/ops/attention.cc), which attention.cc registers as
// candidates of one measured choice (runtime/kernel_choice.h):
//   flash (attention_flash.cc): query x key tiles with an online softmax; no
//     [T, S] block of scores exists, the backward recomputes tile by tile.
//   gemm (attention_gemm.cc): one GEMM makes a key/value head's whole block of
//     scores, the row arithmetic of cuda_kernels/attention_rows.h turns it
//     into probabilities, one GEMM multiplies by V; the backward likewise.
//     The CUDA "cublas" candidate is the same algorithm.
// Both keep only each row's log-sum-exp between forward and backward.
#pragma once
#include "graph/dispatch.h"
#include "runtime/attention_geometry.h"
#include "runtime/kernel.h"

namespace ort_train {

// Attention(Q, K, V[, bias][, mask]) -> (O, LSE).
Status attention_flash(KernelContext& ctx);
Status attention_gemm(KernelContext& ctx);
// AttentionGrad(dO, Q, K, V, O, LSE[, bias][, mask]) -> (dQ, dK, dV[, dScores]).
Status attention_grad_flash(KernelContext& ctx);
Status attention_grad_gemm(KernelContext& ctx);
// float16/bfloat16 Q, K, V (float32 bias, LSE, dScores): the gemm algorithm
// in float32 with the probabilities and the score gradient rounded to 16 bits
// before the GEMMs that read them; outputs rounded once.
Status attention_gemm_half(KernelContext& ctx);
Status attention_grad_gemm_half(KernelContext& ctx);

template <typename T>
struct Operands {
  const T* q;
  const T* k;
  const T* v;
  const T* bias;  // null when absent
  const bool* mask;
};

template <typename T>
struct GradOutputs {
  T* dq;
  T* dk;
  T* dv;
  T* dscores;  // null unless the bias needs a gradient
};

// Q, K, V from input `q` on; the bias and mask from input `bias` on.
template <typename T>
Operands<T> operands(const KernelContext& ctx, size_t q, size_t bias) {
  return {ctx.input(q).data<T>(), ctx.input(q + 1).data<T>(), ctx.input(q + 2).data<T>(),
          ctx.has_input(bias) ? ctx.input(bias).data<T>() : nullptr,
          ctx.has_input(bias + 1) ? ctx.input(bias + 1).data<bool>() : nullptr};
}

// What Attention reads and writes, typed.
template <typename T>
struct ForwardArgs {
  using Value = T;
  Operands<T> in;
  T* out;
  T* lse;  // made even when the graph does not read it
};

// Calls body(ForwardArgs<T>) for Attention's dtype.
template <typename F>
Status with_forward_args(KernelContext& ctx, const AttentionGeometry& g, F&& body) {
  DType dt = ctx.input(0).dtype();
  Tensor& out = ctx.output(0);
  Tensor lse = ctx.has_output(1) ? ctx.output(1) : ctx.allocate(dt, {g.batch, g.heads, g.queries});
  bool ok = dispatch_float(dt, [&]<typename T>() {
    body(ForwardArgs<T>{operands<T>(ctx, 0, 3), out.data<T>(), lse.data<T>()});
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dt);
}

// What AttentionGrad reads and writes, typed.
template <typename T>
struct GradArgs {
  using Value = T;
  Operands<T> in;
  const T* dout;
  const T* out;
  const T* lse;
  GradOutputs<T> grads;
};

// Calls body(GradArgs<T>) for AttentionGrad's dtype (outputs taken first:
// KernelContext::output is not thread-safe, and the bodies run threads).
template <typename F>
Status with_grad_args(KernelContext& ctx, F&& body) {
  DType dt = ctx.input(1).dtype();
  Tensor *dq = &ctx.output(0), *dk = &ctx.output(1), *dv = &ctx.output(2);
  Tensor* dscores = ctx.has_output(3) ? &ctx.output(3) : nullptr;
  bool ok = dispatch_float(dt, [&]<typename T>() {
    body(GradArgs<T>{operands<T>(ctx, 1, 6), ctx.input(0).data<T>(), ctx.input(4).data<T>(), ctx.input(5).data<T>(),
                     {dq->data<T>(), dk->data<T>(), dv->data<T>(), dscores ? dscores->data<T>() : nullptr}});
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dt);
}

}  // namespace ort_train
