#include "cuda_kernels/activations.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {

template <typename T>
__global__ void activation_kernel(Activation op, const T* in, T* out, int64_t n, ActivationParams p) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = activation_value<T>(op, in[i], p);
}

template <typename T>
__global__ void activation_grad_kernel(Activation op, const T* dy, const T* x, T* dx, int64_t n, ActivationParams p) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dx[i] = dy[i] * activation_derivative<T>(op, x[i], p);
}

template <typename T>
cudaError_t forward(Activation op, const void* in, void* out, int64_t n, const ActivationParams& p, cudaStream_t s) {
  activation_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const T*>(in), static_cast<T*>(out), n, p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_activation(Activation op, ElemType t, const void* in, void* out, int64_t n,
                              const ActivationParams& p, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: return forward<float>(op, in, out, n, p, s);
    case ElemType::kF64: return forward<double>(op, in, out, n, p, s);
    case ElemType::kI32: return activation_takes_integers(op) ? forward<int32_t>(op, in, out, n, p, s) : cudaErrorInvalidValue;
    case ElemType::kI64: return activation_takes_integers(op) ? forward<int64_t>(op, in, out, n, p, s) : cudaErrorInvalidValue;
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_activation_grad(Activation op, ElemType t, const void* dy, const void* x, void* dx, int64_t n,
                                   const ActivationParams& p, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32:
      activation_grad_kernel<float><<<blocks_for(n), kThreads, 0, s>>>(
          op, static_cast<const float*>(dy), static_cast<const float*>(x), static_cast<float*>(dx), n, p);
      break;
    case ElemType::kF64:
      activation_grad_kernel<double><<<blocks_for(n), kThreads, 0, s>>>(
          op, static_cast<const double*>(dy), static_cast<const double*>(x), static_cast<double*>(dx), n, p);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
