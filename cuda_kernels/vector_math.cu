#include "cuda_kernels/vector_math.h"
#include "numerics/float16.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {

constexpr int kBlocksPerTensor = 32;  // partial sums per tensor: fixed, so the order never changes


__global__ void add_into_kernel(float* acc, const float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    acc[i] += x[i];
}

template <typename T>
__global__ void add_widened_kernel(float* acc, const T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    acc[i] += static_cast<float>(x[i]);
}

__global__ void scale_kernel(float* x, float s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    x[i] *= s;
}

// Block (tensor t, part p) sums squares of elements p, p+P, ... in a fixed
// per-thread order, then a fixed tree inside the block.
__global__ void sum_squares_kernel(const float* const* ptrs, const int64_t* sizes, double* partials) {
  __shared__ double buf[kThreads];
  int64_t t = blockIdx.y;
  const float* p = ptrs[t];
  int64_t n = sizes[t];
  double acc = 0;
  for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < n; i += int64_t{kBlocksPerTensor} * kThreads) {
    double v = p[i];
    acc += v * v;
  }
  buf[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[t * kBlocksPerTensor + blockIdx.x] = buf[0];
}

__global__ void sum_partials_kernel(const double* partials, int64_t n, double* out) {
  __shared__ double buf[kThreads];
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) acc += partials[i];
  buf[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = buf[0];
}

template <typename T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = value;
}

}  // namespace

cudaError_t launch_add_into(float* acc, const float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  add_into_kernel<<<blocks_for(n), kThreads, 0, stream>>>(acc, x, n);
  return cudaGetLastError();
}

cudaError_t launch_add_into_widened(float* acc, const void* x, bool bfloat16, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (bfloat16)
    add_widened_kernel<<<blocks_for(n), kThreads, 0, stream>>>(acc, static_cast<const BFloat16*>(x), n);
  else
    add_widened_kernel<<<blocks_for(n), kThreads, 0, stream>>>(acc, static_cast<const Float16*>(x), n);
  return cudaGetLastError();
}

cudaError_t launch_scale(float* x, float s, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, s, n);
  return cudaGetLastError();
}

int64_t sum_squares_partials(int64_t count) { return count * kBlocksPerTensor; }

cudaError_t launch_sum_squares(const float* const* ptrs, const int64_t* sizes, int64_t count, double* partials,
                               double* out, cudaStream_t stream) {
  if (count == 0) return cudaMemsetAsync(out, 0, sizeof(double), stream);
  // gridDim.y is limited to 65535 tensors, far above any model's parameter count.
  sum_squares_kernel<<<dim3(kBlocksPerTensor, static_cast<unsigned>(count)), kThreads, 0, stream>>>(ptrs, sizes,
                                                                                                    partials);
  sum_partials_kernel<<<1, kThreads, 0, stream>>>(partials, count * kBlocksPerTensor, out);
  return cudaGetLastError();
}

cudaError_t launch_fill(void* dst, int64_t n, int element_bytes, const void* value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (element_bytes) {
    case 1: fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint8_t*>(dst), n, *static_cast<const uint8_t*>(value)); break;
    case 2: fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint16_t*>(dst), n, *static_cast<const uint16_t*>(value)); break;
    case 4: fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint32_t*>(dst), n, *static_cast<const uint32_t*>(value)); break;
    case 8: fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint64_t*>(dst), n, *static_cast<const uint64_t*>(value)); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
