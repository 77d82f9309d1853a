#include "cuda_kernels/launch.cuh"
#include "cuda_kernels/random.h"

namespace ort_train::cuda {
namespace {

template <typename T>
__global__ void draw_kernel(RandomDraw kind, T* out, int64_t n, uint64_t seed, double a, double b) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<T>(random_draw(kind, seed, static_cast<uint64_t>(i), a, b));
}

template <typename P, typename T>
__global__ void bernoulli_kernel(const P* p, T* out, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<T>(bernoulli_draw(seed, static_cast<uint64_t>(i), static_cast<double>(p[i])) ? 1 : 0);
}

template <typename P>
cudaError_t bernoulli_to(const P* p, ElemType t_out, void* out, int64_t n, uint64_t seed, cudaStream_t s) {
  switch (t_out) {
    case ElemType::kF32: bernoulli_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, static_cast<float*>(out), n, seed); break;
    case ElemType::kF64: bernoulli_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, static_cast<double*>(out), n, seed); break;
    case ElemType::kI32: bernoulli_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, static_cast<int32_t*>(out), n, seed); break;
    case ElemType::kI64: bernoulli_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, static_cast<int64_t*>(out), n, seed); break;
    case ElemType::kBool: bernoulli_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, static_cast<bool*>(out), n, seed); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_random_draw(RandomDraw kind, ElemType t, void* out, int64_t n, uint64_t seed, double a, double b,
                               cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: draw_kernel<<<blocks_for(n), kThreads, 0, s>>>(kind, static_cast<float*>(out), n, seed, a, b); break;
    case ElemType::kF64: draw_kernel<<<blocks_for(n), kThreads, 0, s>>>(kind, static_cast<double*>(out), n, seed, a, b); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_bernoulli(ElemType t_p, const void* p, ElemType t_out, void* out, int64_t n, uint64_t seed,
                             cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t_p) {
    case ElemType::kF32: return bernoulli_to(static_cast<const float*>(p), t_out, out, n, seed, s);
    case ElemType::kF64: return bernoulli_to(static_cast<const double*>(p), t_out, out, n, seed, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ort_train::cuda
