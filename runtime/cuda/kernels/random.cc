// CUDA registrations of RandomUniform, RandomNormal, their *Like forms and
// Bernoulli. Kernels: cuda_kernels/random.cu; the seed is the CPU kernels'
// (runtime/dropout_seed.h), so both devices draw the same values.
#include "cuda_kernels/random.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/dropout_seed.h"

namespace ort_train::cuda {
namespace {

KernelFn draw(RandomDraw kind) {
  return [kind](KernelContext& ctx) -> Status {
    const bool uniform = kind == RandomDraw::kUniform;
    CUDA_OUTPUT(out, ctx, 0);
    auto t = elem_type(out.dtype());
    if (!t || !dtype_is_float(out.dtype())) return unsupported_cuda_dtype(ctx, out.dtype());
    CUDA_RETURN_IF_ERROR(launch_random_draw(kind, *t, out.raw(), out.numel(), dropout_seed(ctx),
                                            ctx.node().attr_float(uniform ? "low" : "mean", 0.f),
                                            ctx.node().attr_float(uniform ? "high" : "scale", 1.f), stream()));
    return Status::Ok();
  };
}

Status bernoulli(KernelContext& ctx) {
  const Tensor& p = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  auto tp = elem_type(p.dtype());
  auto to = elem_type(out.dtype());
  if (!tp || !dtype_is_float(p.dtype())) return unsupported_cuda_dtype(ctx, p.dtype());
  if (!to) return unsupported_cuda_dtype(ctx, out.dtype());
  CUDA_RETURN_IF_ERROR(launch_bernoulli(*tp, p.raw(), *to, out.raw(), out.numel(), dropout_seed(ctx), stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("RandomUniform", 1, 1000, draw(RandomDraw::kUniform));
ORT_REGISTER_CUDA_KERNEL("RandomNormal", 1, 1000, draw(RandomDraw::kNormal));
ORT_REGISTER_CUDA_KERNEL("RandomUniformLike", 1, 1000, draw(RandomDraw::kUniform));
ORT_REGISTER_CUDA_KERNEL("RandomNormalLike", 1, 1000, draw(RandomDraw::kNormal));
ORT_REGISTER_CUDA_KERNEL("Bernoulli", 15, 1000, bernoulli);

}  // namespace ort_train::cuda
