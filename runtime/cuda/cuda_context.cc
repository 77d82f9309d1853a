#include "runtime/cuda/cuda_context.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "runtime/cuda/cuda_allocator.h"
#include "runtime/cuda/cuda_check.h"

namespace ort_train::cuda {
namespace {

std::unique_ptr<CudaContext>& the_context() {
  static std::unique_ptr<CudaContext> c;
  return c;
}

Status apply_settings(CudaContext& c, const DeviceSettings& s) {
  c.deterministic = s.deterministic;
  c.allow_tf32 = s.allow_tf32;
  // TF32 tensor cores for float32 GEMMs unless turned off; cuBLAS's pedantic
  // mode keeps full float32 and fixed reduction order. A 16-bit GEMM's split-K
  // partial sums are never reduced in 16 bits: docs/cuda.md promises float32
  // accumulation (PyTorch allows the 16-bit reduction by default; a run that
  // holds to its promise is worth the rare split-K case it costs).
  cublasMath_t math = s.allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  math = static_cast<cublasMath_t>(math | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(c.cublas, math));
  return Status::Ok();
}

}  // namespace

CudaContext::~CudaContext() {
  allocator.reset();
  if (cudnn) cudnnDestroy(cudnn);
  if (cublas_lt) cublasLtDestroy(cublas_lt);
  if (cublas) cublasDestroy(cublas);
  staging.reset();
  if (compute) cudaStreamDestroy(compute);
}

Result<CudaContext*> init_context(const DeviceSettings& settings) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto& c = the_context();
  if (c) {
    if (c->device != settings.index)
      return invalid_argument("this process already trains on cuda:{}; it cannot also use cuda:{}", c->device,
                              settings.index);
    RETURN_IF_ERROR(apply_settings(*c, settings));
    return c.get();
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cudaGetLastError();
    // Without a GPU the runtime reports "insufficient driver" or "no device":
    // say what is actually missing when no NVIDIA driver is loaded at all.
    if (!std::filesystem::exists("/proc/driver/nvidia/version"))
      return unavailable("--device cuda: this machine has no NVIDIA GPU (no NVIDIA driver is loaded); use --device cpu");
    return unavailable("--device cuda: no CUDA device is visible ({}); use --device cpu",
                       e != cudaSuccess ? cudaGetErrorString(e) : "no GPU found");
  }
  if (settings.index < 0 || settings.index >= count)
    return invalid_argument("--device cuda:{}: only {} GPU(s) are visible (cuda:0 to cuda:{})", settings.index, count,
                            count - 1);
  // cuBLAS picks reproducible GEMM reductions only with a fixed workspace configuration.
  if (settings.deterministic) setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  auto ctx = std::make_unique<CudaContext>();
  ctx->device = settings.index;
  CUDA_RETURN_IF_ERROR(cudaSetDevice(ctx->device));
  CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&ctx->props, ctx->device));
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&ctx->compute, cudaStreamNonBlocking));
  ctx->staging = std::make_unique<PinnedStaging>();
  ASSIGN_OR_RETURN(ctx->index_faults, IndexFaults::create());
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&ctx->cublas));
  CUBLAS_RETURN_IF_ERROR(cublasSetStream(ctx->cublas, ctx->compute));
  CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&ctx->cublas_lt));
  CUDNN_RETURN_IF_ERROR(cudnnCreate(&ctx->cudnn));
  CUDNN_RETURN_IF_ERROR(cudnnSetStream(ctx->cudnn, ctx->compute));
  ctx->allocator = make_cuda_caching_allocator(ctx->device);
  RETURN_IF_ERROR(apply_settings(*ctx, settings));
  c = std::move(ctx);
  return c.get();
}

CudaContext& context() { return *the_context(); }

std::shared_ptr<Storage> scratch(size_t bytes) { return context().allocator->allocate(bytes); }

Status upload(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  return context().staging->upload(dst, src, bytes, context().compute);
}

}  // namespace ort_train::cuda
