#include "cuda_kernels/dropout.h"
#include "cuda_kernels/launch.cuh"
#include "numerics/float16.h"

namespace ort_train::cuda {
namespace {



template <typename T>
__global__ void dropout_kernel(const T* x, T* y, bool* mask, int64_t n, uint64_t seed, float drop_below, T scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    bool keep = counter_uniform(seed, static_cast<uint64_t>(i)) >= drop_below;
    y[i] = keep ? x[i] * scale : T(0);
    if (mask) mask[i] = keep;
  }
}

template <typename T>
__global__ void dropout_grad_kernel(const T* dy, const bool* mask, T* dx, int64_t n, T scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dx[i] = mask[i] ? dy[i] * scale : T(0);
}

// 16-bit data: the product in float32, rounded once (the CPU's 16-bit kernel).
template <typename H>
__global__ void dropout_half_kernel(const H* x, H* y, bool* mask, int64_t n, uint64_t seed, float drop_below, float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    bool keep = counter_uniform(seed, static_cast<uint64_t>(i)) >= drop_below;
    y[i] = H(keep ? static_cast<float>(x[i]) * scale : 0.f);
    if (mask) mask[i] = keep;
  }
}

template <typename H>
__global__ void dropout_grad_half_kernel(const H* dy, const bool* mask, H* dx, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dx[i] = H(mask[i] ? static_cast<float>(dy[i]) * scale : 0.f);
}

__global__ void fill_true_kernel(bool* mask, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    mask[i] = true;
}

}  // namespace

cudaError_t launch_dropout(ElemType t, const void* x, void* y, bool* mask, int64_t n, uint64_t seed, float drop_below,
                           double scale, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (t == ElemType::kF32)
    dropout_kernel<float><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(x), static_cast<float*>(y), mask, n, seed, drop_below, static_cast<float>(scale));
  else if (t == ElemType::kF64)
    dropout_kernel<double><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const double*>(x), static_cast<double*>(y), mask, n, seed, drop_below, scale);
  else if (t == ElemType::kBF16)
    dropout_half_kernel<BFloat16><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const BFloat16*>(x), static_cast<BFloat16*>(y), mask, n, seed, drop_below, static_cast<float>(scale));
  else if (t == ElemType::kF16)
    dropout_half_kernel<Float16><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const Float16*>(x), static_cast<Float16*>(y), mask, n, seed, drop_below, static_cast<float>(scale));
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_dropout_grad(ElemType t, const void* dy, const bool* mask, void* dx, int64_t n, double scale,
                                cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (t == ElemType::kF32)
    dropout_grad_kernel<float><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(dy), mask, static_cast<float*>(dx), n, static_cast<float>(scale));
  else if (t == ElemType::kF64)
    dropout_grad_kernel<double><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const double*>(dy), mask, static_cast<double*>(dx), n, scale);
  else if (t == ElemType::kBF16)
    dropout_grad_half_kernel<BFloat16><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const BFloat16*>(dy), mask, static_cast<BFloat16*>(dx), n, static_cast<float>(scale));
  else if (t == ElemType::kF16)
    dropout_grad_half_kernel<Float16><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const Float16*>(dy), mask, static_cast<Float16*>(dx), n, static_cast<float>(scale));
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launch_fill_true(bool* mask, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  fill_true_kernel<<<blocks_for(n), kThreads, 0, s>>>(mask, n);
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
