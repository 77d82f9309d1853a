// CUDA registrations of com.ort_train Attention and AttentionGrad (float32, and 16-bit):
// two candidates chosen by measurement on the user's card
// (runtime/kernel_choice.h).
//   cublas (the default, and --deterministic's): the CPU "gemm" candidate's
//     algorithm (runtime/cpu/kernels/attention_gemm.cc) with cuBLAS
//     strided-batched GEMMs over the (b, key/value head) groups, on TF32 tensor
//     cores unless --no-tf32, and one warp per score row between them
//     (cuda_kernels/attention_rows.cu). The [B*H*T, S] scores exist only as
//     scratch during the kernel (two blocks in the backward); only each row's
//     log-sum-exp is kept, as before.
//   tiled (cuda_kernels/attention.cu): no block of scores, no tensor cores;
//     slower wherever it was measured, kept for rows the scratch cannot hold.
// 16-bit Q, K, V (half_activations'): the cublas algorithm on 16-bit GEMMs,
// the one candidate (attention_cublas_half below).
// Geometry: runtime/attention_geometry.
#include "cuda_kernels/attention_rows.h"
#include "cuda_kernels/elementwise.h"
#include "runtime/attention_geometry.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/gemm_batched.h"
#include "runtime/kernel_choice.h"

namespace ort_train::cuda {
namespace {

const float* optional_input(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.input(i).data<float>() : nullptr;
}
const bool* optional_mask(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.input(i).data<bool>() : nullptr;
}

// Output 1 (LSE) when the graph reads it, else device scratch.
Result<Tensor> lse_output(KernelContext& ctx, const AttentionGeometry& g) {
  if (ctx.has_output(1)) {
    CUDA_OUTPUT(l, ctx, 1);
    return l;
  }
  return temp(ctx, DType::kFloat, {g.batch, g.heads, g.queries});
}

// X [groups][rows, S] = scale * Q K^T, one strided-batched GEMM over the (b, kh) groups.
Status group_scores(const AttentionGeometry& g, const float* q, const float* k, float* x) {
  int64_t rows = attention_group_rows(g), S = g.keys, D = g.head_size;
  return gemm_batched(DType::kFloat, false, !g.k_transposed, rows, S, D, g.scale, q, D, rows * D, k,
                      g.k_transposed ? S : D, S * D, 0.0, x, S, rows * S, g.batch * g.kv_heads);
}

Status attention_tiled(KernelContext& ctx) {
  if (ctx.input(0).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(0).dtype());
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(Tensor lse, lse_output(ctx, g));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_forward(
      g, ctx.input(0).data<float>(), ctx.input(1).data<float>(), ctx.input(2).data<float>(), optional_input(ctx, 3),
      optional_mask(ctx, 4), out.data<float>(), lse.data<float>(), stream())));
  return Status::Ok();
}

Status attention_cublas(KernelContext& ctx) {
  if (ctx.input(0).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(0).dtype());
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  if (attention_has_empty_size(g)) return attention_tiled(ctx);  // cuBLAS refuses a leading dimension of 0
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(Tensor lse, lse_output(ctx, g));
  ASSIGN_OR_RETURN(Tensor x, temp(ctx, DType::kFloat, {g.batch, g.heads, g.queries, g.keys}));
  int64_t rows = attention_group_rows(g), S = g.keys, Dv = g.value_size;
  RETURN_IF_ERROR(group_scores(g, ctx.input(0).data<float>(), ctx.input(1).data<float>(), x.data<float>()));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_softmax_rows(
      g, optional_input(ctx, 3), optional_mask(ctx, 4), x.data<float>(), lse.data<float>(), stream())));
  // O [groups][rows, Dv] = X V.
  return gemm_batched(DType::kFloat, false, false, rows, Dv, S, 1.0, x.data<float>(), S, rows * S,
                      ctx.input(2).data<float>(), Dv, S * Dv, 0.0, out.data<float>(), Dv, rows * Dv,
                      g.batch * g.kv_heads);
}

struct GradTensors {
  Tensor *dq, *dk, *dv;
  float* dscores;  // null unless the bias needs a gradient
};

Result<GradTensors> grad_outputs(KernelContext& ctx) {
  CUDA_OUTPUT(dq, ctx, 0);
  CUDA_OUTPUT(dk, ctx, 1);
  CUDA_OUTPUT(dv, ctx, 2);
  float* dscores = nullptr;
  if (ctx.has_output(3)) {
    CUDA_OUTPUT(ds, ctx, 3);
    dscores = ds.data<float>();
  }
  return GradTensors{&dq, &dk, &dv, dscores};
}

Status attention_grad_tiled(KernelContext& ctx) {
  if (ctx.input(1).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(1).dtype());
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  ASSIGN_OR_RETURN(GradTensors o, grad_outputs(ctx));
  ASSIGN_OR_RETURN(Tensor row_dot, temp(ctx, DType::kFloat, {g.batch, g.heads, g.queries}));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_backward(
      g, ctx.input(0).data<float>(), ctx.input(1).data<float>(), ctx.input(2).data<float>(),
      ctx.input(3).data<float>(), ctx.input(4).data<float>(), ctx.input(5).data<float>(), optional_input(ctx, 6),
      optional_mask(ctx, 7), row_dot.data<float>(), o.dq->data<float>(), o.dk->data<float>(), o.dv->data<float>(),
      o.dscores, stream())));
  return Status::Ok();
}

// AttentionGrad(dO, Q, K, V, O, LSE[, bias][, mask]) -> (dQ, dK, dV[, dScores]).
Status attention_grad_cublas(KernelContext& ctx) {
  if (ctx.input(1).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(1).dtype());
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  if (attention_has_empty_size(g)) return attention_grad_tiled(ctx);
  ASSIGN_OR_RETURN(GradTensors o, grad_outputs(ctx));
  Dims scores{g.batch, g.heads, g.queries, g.keys};
  ASSIGN_OR_RETURN(Tensor x, temp(ctx, DType::kFloat, scores));
  ASSIGN_OR_RETURN(Tensor y, temp(ctx, DType::kFloat, scores));
  int64_t groups = g.batch * g.kv_heads, rows = attention_group_rows(g), S = g.keys, D = g.head_size, Dv = g.value_size;
  const float* dout = ctx.input(0).data<float>();
  const float* q = ctx.input(1).data<float>();
  const float* k = ctx.input(2).data<float>();
  const float* v = ctx.input(3).data<float>();
  float *px = x.data<float>(), *py = y.data<float>();
  RETURN_IF_ERROR(group_scores(g, q, k, px));
  // Y = dO V^T.
  RETURN_IF_ERROR(gemm_batched(DType::kFloat, false, true, rows, S, Dv, 1.0, dout, Dv, rows * Dv, v, Dv, S * Dv, 0.0,
                               py, S, rows * S, groups));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(
      launch_attention_grad_rows(g, optional_input(ctx, 6), optional_mask(ctx, 7), dout, ctx.input(4).data<float>(),
                                 ctx.input(5).data<float>(), px, py, o.dscores, stream())));
  // dV = X^T dO: the sum over the group's heads and queries happens inside the GEMM.
  RETURN_IF_ERROR(gemm_batched(DType::kFloat, true, false, S, Dv, rows, 1.0, px, S, rows * S, dout, Dv, rows * Dv,
                               0.0, o.dv->data<float>(), Dv, S * Dv, groups));
  // dQ = scale Y K (K as [S, D], or k_transposed [D, S]).
  RETURN_IF_ERROR(gemm_batched(DType::kFloat, false, g.k_transposed, rows, D, S, g.scale, py, S, rows * S, k,
                               g.k_transposed ? S : D, S * D, 0.0, o.dq->data<float>(), D, rows * D, groups));
  if (g.k_transposed)  // dK [D, S] = scale Q^T Y
    return gemm_batched(DType::kFloat, true, false, D, S, rows, g.scale, q, D, rows * D, py, S, rows * S, 0.0,
                        o.dk->data<float>(), S, S * D, groups);
  // dK [S, D] = scale Y^T Q
  return gemm_batched(DType::kFloat, true, false, S, D, rows, g.scale, py, S, rows * S, q, D, rows * D, 0.0,
                      o.dk->data<float>(), D, S * D, groups);
}

// ---- 16-bit Q, K, V (half_activations'): the cublas algorithm with 16-bit
// GEMMs on tensor cores (float32 accumulation). The scores and their rows
// stay float32 (LSE, bias and dScores are float32); the probabilities and the
// score gradient are rounded to 16 bits for the GEMMs that read them, as the
// CPU's 16-bit kernel does (runtime/cpu/kernels/attention_gemm.cc).

// A float32 block rounded into a new 16-bit scratch of the same dims.
Result<Tensor> rounded_copy(KernelContext& ctx, const Tensor& f, DType half) {
  ASSIGN_OR_RETURN(Tensor h, temp(ctx, half, f.dims()));
  CUDA_RETURN_IF_ERROR(launch_cast(ElemType::kF32, *elem_type(half), f.raw(), h.raw(), f.numel(), stream()));
  return h;
}

// A 16-bit tensor widened into a new float32 scratch.
Result<Tensor> widened_copy(KernelContext& ctx, const Tensor& h) {
  ASSIGN_OR_RETURN(Tensor f, temp(ctx, DType::kFloat, h.dims()));
  CUDA_RETURN_IF_ERROR(launch_cast(*elem_type(h.dtype()), ElemType::kF32, h.raw(), f.raw(), h.numel(), stream()));
  return f;
}

Status empty_half_attention(const KernelContext& ctx) {
  return unsupported("{}: 16-bit attention with an empty dimension is not supported", ctx.node().describe());
}

Status attention_cublas_half(KernelContext& ctx) {
  DType half = ctx.input(0).dtype();
  if (!dtype_is_half(half)) return unsupported_cuda_dtype(ctx, half);
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  if (attention_has_empty_size(g)) return empty_half_attention(ctx);
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(Tensor lse, lse_output(ctx, g));
  ASSIGN_OR_RETURN(Tensor x, temp(ctx, DType::kFloat, {g.batch, g.heads, g.queries, g.keys}));
  int64_t groups = g.batch * g.kv_heads, rows = attention_group_rows(g), S = g.keys, D = g.head_size,
          Dv = g.value_size;
  RETURN_IF_ERROR(gemm_batched(half, DType::kFloat, false, !g.k_transposed, rows, S, D, g.scale, ctx.input(0).raw(), D,
                               rows * D, ctx.input(1).raw(), g.k_transposed ? S : D, S * D, 0.0, x.raw(), S, rows * S,
                               groups));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_softmax_rows(
      g, optional_input(ctx, 3), optional_mask(ctx, 4), x.data<float>(), lse.data<float>(), stream())));
  ASSIGN_OR_RETURN(Tensor p, rounded_copy(ctx, x, half));
  return gemm_batched(half, false, false, rows, Dv, S, 1.0, p.raw(), S, rows * S, ctx.input(2).raw(), Dv, S * Dv, 0.0,
                      out.raw(), Dv, rows * Dv, groups);
}

Status attention_grad_cublas_half(KernelContext& ctx) {
  DType half = ctx.input(1).dtype();
  if (!dtype_is_half(half)) return unsupported_cuda_dtype(ctx, half);
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  if (attention_has_empty_size(g)) return empty_half_attention(ctx);
  ASSIGN_OR_RETURN(GradTensors o, grad_outputs(ctx));
  Dims scores{g.batch, g.heads, g.queries, g.keys};
  ASSIGN_OR_RETURN(Tensor x, temp(ctx, DType::kFloat, scores));
  ASSIGN_OR_RETURN(Tensor y, temp(ctx, DType::kFloat, scores));
  int64_t groups = g.batch * g.kv_heads, rows = attention_group_rows(g), S = g.keys, D = g.head_size, Dv = g.value_size;
  const Tensor &dout = ctx.input(0), &q = ctx.input(1), &k = ctx.input(2), &v = ctx.input(3);
  RETURN_IF_ERROR(gemm_batched(half, DType::kFloat, false, !g.k_transposed, rows, S, D, g.scale, q.raw(), D, rows * D,
                               k.raw(), g.k_transposed ? S : D, S * D, 0.0, x.raw(), S, rows * S, groups));
  // Y = dO V^T.
  RETURN_IF_ERROR(gemm_batched(half, DType::kFloat, false, true, rows, S, Dv, 1.0, dout.raw(), Dv, rows * Dv, v.raw(),
                               Dv, S * Dv, 0.0, y.raw(), S, rows * S, groups));
  // The rows read dO . O in float32: widened copies (of [B, H, T, Dv], small beside the scores).
  ASSIGN_OR_RETURN(Tensor dout32, widened_copy(ctx, dout));
  ASSIGN_OR_RETURN(Tensor out32, widened_copy(ctx, ctx.input(4)));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_grad_rows(
      g, optional_input(ctx, 6), optional_mask(ctx, 7), dout32.data<float>(), out32.data<float>(),
      ctx.input(5).data<float>(), x.data<float>(), y.data<float>(), o.dscores, stream())));
  ASSIGN_OR_RETURN(Tensor p, rounded_copy(ctx, x, half));
  ASSIGN_OR_RETURN(Tensor ds, rounded_copy(ctx, y, half));
  // dV = P^T dO; dQ = scale dS K; dK = scale dS^T Q (or Q^T dS, k_transposed).
  RETURN_IF_ERROR(gemm_batched(half, true, false, S, Dv, rows, 1.0, p.raw(), S, rows * S, dout.raw(), Dv, rows * Dv,
                               0.0, o.dv->raw(), Dv, S * Dv, groups));
  RETURN_IF_ERROR(gemm_batched(half, false, g.k_transposed, rows, D, S, g.scale, ds.raw(), S, rows * S, k.raw(),
                               g.k_transposed ? S : D, S * D, 0.0, o.dq->raw(), D, rows * D, groups));
  if (g.k_transposed)
    return gemm_batched(half, true, false, D, S, rows, g.scale, q.raw(), D, rows * D, ds.raw(), S, rows * S, 0.0,
                        o.dk->raw(), S, S * D, groups);
  return gemm_batched(half, true, false, S, D, rows, g.scale, ds.raw(), S, rows * S, q.raw(), D, rows * D, 0.0,
                      o.dk->raw(), D, S * D, groups);
}

Status wait_for_stream() {
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  return Status::Ok();
}

// cuBLAS picks one algorithm per shape and uses no atomics: deterministic.
// The tiled kernels sum in a fixed order: deterministic too.
const std::vector<KernelCandidate> kForward{{"cublas", attention_cublas, true}, {"tiled", attention_tiled, true}};
const std::vector<KernelCandidate> kBackward{{"cublas", attention_grad_cublas, true},
                                             {"tiled", attention_grad_tiled, true}};

}  // namespace

ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "Attention", 1, 1000,
                                   measured_choice(DeviceKind::kCuda, kForward, wait_for_stream));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "AttentionGrad", 1, 1000,
                                   measured_choice(DeviceKind::kCuda, kBackward, wait_for_stream));
// 16-bit Q, K, V: the cublas algorithm in 16 bits, the one implementation.
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "Attention", 1, 1000, DeviceKind::kCuda, attention_cublas_half,
                               (std::vector<DType>{DType::kBFloat16, DType::kFloat16}));
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "AttentionGrad", 1, 1000, DeviceKind::kCuda,
                               attention_grad_cublas_half, (std::vector<DType>{DType::kBFloat16, DType::kFloat16}));

}  // namespace ort_train::cuda
