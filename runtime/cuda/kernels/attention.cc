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
// 16-bit Q, K, V (half_activations'): the cublas algorithm on 16-bit GEMMs
// (attention_cublas below), and tensor-core flash kernels, forward and
// backward, as second measured candidates (cuda_kernels/attention_flash16.h).
// Geometry: runtime/attention_geometry.
#include "cuda_kernels/attention_flash16.h"
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

// X [groups][rows, S] = scale * Q K^T (float32), one strided-batched GEMM over
// the (b, kh) groups; Q and K of `dt` (float32, or 16-bit on tensor cores).
Status group_scores(const AttentionGeometry& g, DType dt, const void* q, const void* k, float* x) {
  int64_t rows = attention_group_rows(g), S = g.keys, D = g.head_size;
  return gemm_batched(dt, DType::kFloat, false, !g.k_transposed, rows, S, D, g.scale, q, D, rows * D, k,
                      g.k_transposed ? S : D, S * D, 0.0, x, S, rows * S, g.batch * g.kv_heads);
}

// What a GEMM of `dt` operands reads of a float32 block: the block itself, or
// (16-bit) a rounded copy of it. Scratch for the copy is taken from ctx.
Result<Tensor> gemm_operand(KernelContext& ctx, const Tensor& f, DType dt) {
  if (dt == DType::kFloat) return f;
  ASSIGN_OR_RETURN(Tensor h, temp(ctx, dt, f.dims()));
  CUDA_RETURN_IF_ERROR(launch_cast(ElemType::kF32, *stored_elem_type(dt), f.raw(), h.raw(), f.numel(), stream()));
  return h;
}

// A tensor's values as float32: itself, or (16-bit) a widened copy.
Result<Tensor> as_float(KernelContext& ctx, const Tensor& t) {
  if (t.dtype() == DType::kFloat) return t;
  ASSIGN_OR_RETURN(Tensor f, temp(ctx, DType::kFloat, t.dims()));
  CUDA_RETURN_IF_ERROR(launch_cast(*stored_elem_type(t.dtype()), ElemType::kF32, t.raw(), f.raw(), t.numel(), stream()));
  return f;
}

Status empty_half_attention(const KernelContext& ctx) {
  return unsupported("{}: 16-bit attention with an empty dimension is not supported", ctx.node().describe());
}

// Float32, or (16-bit attention) bfloat16/float16 operands.
bool cublas_dtype(DType dt) { return dt == DType::kFloat || dtype_is_half(dt); }

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

// Q, K, V float32 (scores on TF32 unless --no-tf32) or 16-bit: then the five
// GEMMs run in 16 bits on tensor cores, the scores and their rows stay
// float32, and the probabilities (and in the backward the score gradient)
// are rounded to 16 bits for the GEMMs that read them, as the CPU's 16-bit
// kernel does (runtime/cpu/kernels/attention_gemm.cc).
Status attention_cublas(KernelContext& ctx) {
  DType dt = ctx.input(0).dtype();
  if (!cublas_dtype(dt)) return unsupported_cuda_dtype(ctx, dt);
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  if (attention_has_empty_size(g)) {  // cuBLAS refuses a leading dimension of 0
    if (dt != DType::kFloat) return empty_half_attention(ctx);
    return attention_tiled(ctx);
  }
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(Tensor lse, lse_output(ctx, g));
  ASSIGN_OR_RETURN(Tensor x, temp(ctx, DType::kFloat, {g.batch, g.heads, g.queries, g.keys}));
  int64_t rows = attention_group_rows(g), S = g.keys, Dv = g.value_size;
  RETURN_IF_ERROR(group_scores(g, dt, ctx.input(0).raw(), ctx.input(1).raw(), x.data<float>()));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_softmax_rows(
      g, optional_input(ctx, 3), optional_mask(ctx, 4), x.data<float>(), lse.data<float>(), stream())));
  ASSIGN_OR_RETURN(Tensor p, gemm_operand(ctx, x, dt));
  // O [groups][rows, Dv] = P V.
  return gemm_batched(dt, false, false, rows, Dv, S, 1.0, p.raw(), S, rows * S, ctx.input(2).raw(), Dv, S * Dv, 0.0,
                      out.raw(), Dv, rows * Dv, g.batch * g.kv_heads);
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
  DType dt = ctx.input(1).dtype();
  if (!cublas_dtype(dt)) return unsupported_cuda_dtype(ctx, dt);
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  if (attention_has_empty_size(g)) {
    if (dt != DType::kFloat) return empty_half_attention(ctx);
    return attention_grad_tiled(ctx);
  }
  ASSIGN_OR_RETURN(GradTensors o, grad_outputs(ctx));
  Dims scores{g.batch, g.heads, g.queries, g.keys};
  ASSIGN_OR_RETURN(Tensor x, temp(ctx, DType::kFloat, scores));
  ASSIGN_OR_RETURN(Tensor y, temp(ctx, DType::kFloat, scores));
  int64_t groups = g.batch * g.kv_heads, rows = attention_group_rows(g), S = g.keys, D = g.head_size, Dv = g.value_size;
  const Tensor &dout = ctx.input(0), &q = ctx.input(1), &k = ctx.input(2), &v = ctx.input(3);
  RETURN_IF_ERROR(group_scores(g, dt, q.raw(), k.raw(), x.data<float>()));
  // Y = dO V^T (float32).
  RETURN_IF_ERROR(gemm_batched(dt, DType::kFloat, false, true, rows, S, Dv, 1.0, dout.raw(), Dv, rows * Dv, v.raw(),
                               Dv, S * Dv, 0.0, y.raw(), S, rows * S, groups));
  // The rows read dO . O in float32 (16-bit: widened copies of [B, H, T, Dv], small beside the scores).
  ASSIGN_OR_RETURN(Tensor dout32, as_float(ctx, dout));
  ASSIGN_OR_RETURN(Tensor out32, as_float(ctx, ctx.input(4)));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_grad_rows(
      g, optional_input(ctx, 6), optional_mask(ctx, 7), dout32.data<float>(), out32.data<float>(),
      ctx.input(5).data<float>(), x.data<float>(), y.data<float>(), o.dscores, stream())));
  ASSIGN_OR_RETURN(Tensor p, gemm_operand(ctx, x, dt));
  ASSIGN_OR_RETURN(Tensor ds, gemm_operand(ctx, y, dt));
  // dV = P^T dO: the sum over the group's heads and queries happens inside the GEMM.
  RETURN_IF_ERROR(gemm_batched(dt, true, false, S, Dv, rows, 1.0, p.raw(), S, rows * S, dout.raw(), Dv, rows * Dv, 0.0,
                               o.dv->raw(), Dv, S * Dv, groups));
  // dQ = scale dS K (K as [S, D], or k_transposed [D, S]).
  RETURN_IF_ERROR(gemm_batched(dt, false, g.k_transposed, rows, D, S, g.scale, ds.raw(), S, rows * S, k.raw(),
                               g.k_transposed ? S : D, S * D, 0.0, o.dq->raw(), D, rows * D, groups));
  if (g.k_transposed)  // dK [D, S] = scale Q^T dS
    return gemm_batched(dt, true, false, D, S, rows, g.scale, q.raw(), D, rows * D, ds.raw(), S, rows * S, 0.0,
                        o.dk->raw(), S, S * D, groups);
  // dK [S, D] = scale dS^T Q
  return gemm_batched(dt, true, false, S, D, rows, g.scale, ds.raw(), S, rows * S, q.raw(), D, rows * D, 0.0,
                      o.dk->raw(), D, S * D, groups);
}

// The "flash" candidate of 16-bit attention's forward (cuda_kernels/attention_flash16.h):
// tensor-core tiles, no block of scores; head sizes 64 and 128.
Status attention_flash_half(KernelContext& ctx) {
  DType half = ctx.input(0).dtype();
  if (!dtype_is_half(half)) return unsupported_cuda_dtype(ctx, half);
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  if (!attention_flash16_supports(g))
    return unsupported("{}: the flash kernel takes head and value sizes of 64 or 128 and K untransposed",
                       ctx.node().describe());
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(Tensor lse, lse_output(ctx, g));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_flash16_forward(
      g, half == DType::kBFloat16, ctx.input(0).raw(), ctx.input(1).raw(), ctx.input(2).raw(), optional_input(ctx, 3),
      optional_mask(ctx, 4), out.raw(), lse.data<float>(), stream())));
  return Status::Ok();
}

// The "flash" candidate of 16-bit AttentionGrad (attention_flash16.h): head size 64; dQ through atomics.
Status attention_grad_flash_half(KernelContext& ctx) {
  DType half = ctx.input(1).dtype();
  if (!dtype_is_half(half)) return unsupported_cuda_dtype(ctx, half);
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  if (!attention_flash16_backward_supports(g))
    return unsupported("{}: the flash backward takes head and value size 64 and K untransposed",
                       ctx.node().describe());
  ASSIGN_OR_RETURN(GradTensors o, grad_outputs(ctx));
  ASSIGN_OR_RETURN(Tensor dq32, temp(ctx, DType::kFloat, o.dq->dims()));
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_flash16_backward(
      g, half == DType::kBFloat16, ctx.input(0).raw(), ctx.input(1).raw(), ctx.input(2).raw(), ctx.input(3).raw(),
      ctx.input(4).raw(), ctx.input(5).data<float>(), optional_input(ctx, 6), optional_mask(ctx, 7),
      dq32.data<float>(), o.dq->raw(), o.dk->raw(), o.dv->raw(), o.dscores, stream())));
  return Status::Ok();
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
                                   measured_choice(DeviceKind::kCuda, kForward, wait_for_stream, host_copy));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "AttentionGrad", 1, 1000,
                                   measured_choice(DeviceKind::kCuda, kBackward, wait_for_stream, host_copy));
// 16-bit Q, K, V: the cublas algorithm in 16 bits, and the flash kernels as
// measured candidates (dropped where slower or where their outputs disagree
// with cublas's: they have never run on a GPU). The flash backward adds dQ
// with atomics, so --deterministic keeps cublas.
ORT_REGISTER_KERNEL_FOR_DTYPES(
    kOrtTrainDomain, "Attention", 1, 1000, DeviceKind::kCuda,
    measured_choice(DeviceKind::kCuda, {{"cublas", attention_cublas, true}, {"flash", attention_flash_half, true}},
                    wait_for_stream, host_copy),
    (std::vector<DType>{DType::kBFloat16, DType::kFloat16}));
ORT_REGISTER_KERNEL_FOR_DTYPES(
    kOrtTrainDomain, "AttentionGrad", 1, 1000, DeviceKind::kCuda,
    measured_choice(DeviceKind::kCuda,
                    {{"cublas", attention_grad_cublas, true}, {"flash", attention_grad_flash_half, false}},
                    wait_for_stream, host_copy),
    (std::vector<DType>{DType::kBFloat16, DType::kFloat16}));

}  // namespace ort_train::cuda
