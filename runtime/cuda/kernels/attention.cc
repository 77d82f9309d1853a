// CUDA registrations of com.ort_train Attention and AttentionGrad (float32).
// Kernels: cuda_kernels/attention.cu; geometry: runtime/attention_geometry.
#include "cuda_kernels/attention.h"
#include "runtime/attention_geometry.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

const float* optional_input(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.input(i).data<float>() : nullptr;
}
const bool* optional_mask(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.input(i).data<bool>() : nullptr;
}

Status attention(KernelContext& ctx) {
  if (ctx.input(0).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(0).dtype());
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  CUDA_OUTPUT(out, ctx, 0);
  Tensor lse;
  if (ctx.has_output(1)) {
    CUDA_OUTPUT(l, ctx, 1);
    lse = l;
  } else {
    lse = ctx.allocate(DType::kFloat, {g.batch, g.heads, g.queries});
  }
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_forward(
      g, ctx.input(0).data<float>(), ctx.input(1).data<float>(), ctx.input(2).data<float>(), optional_input(ctx, 3),
      optional_mask(ctx, 4), out.data<float>(), lse.data<float>(), stream())));
  return Status::Ok();
}

Status attention_grad(KernelContext& ctx) {
  if (ctx.input(1).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(1).dtype());
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  CUDA_OUTPUT(dq, ctx, 0);
  CUDA_OUTPUT(dk, ctx, 1);
  CUDA_OUTPUT(dv, ctx, 2);
  float* dscores = nullptr;
  if (ctx.has_output(3)) {
    CUDA_OUTPUT(ds, ctx, 3);
    dscores = ds.data<float>();
  }
  Tensor row_dot = ctx.allocate(DType::kFloat, {g.batch, g.heads, g.queries});
  CUDA_RETURN_IF_ERROR(static_cast<cudaError_t>(launch_attention_backward(
      g, ctx.input(0).data<float>(), ctx.input(1).data<float>(), ctx.input(2).data<float>(),
      ctx.input(3).data<float>(), ctx.input(4).data<float>(), ctx.input(5).data<float>(), optional_input(ctx, 6),
      optional_mask(ctx, 7), row_dot.data<float>(), dq.data<float>(), dk.data<float>(), dv.data<float>(), dscores,
      stream())));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "Attention", 1, 1000, attention);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "AttentionGrad", 1, 1000, attention_grad);

}  // namespace ort_train::cuda
