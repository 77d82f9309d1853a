#include "cuda_kernels/trilu_cumsum.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {



template <typename T>
__global__ void trilu_kernel(const T* x, T* y, int64_t total, int64_t rows, int64_t cols, int64_t k, bool upper) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    int64_t j = e % cols, i = (e / cols) % rows;
    // Upper keeps j >= i + k; lower keeps j <= i + k.
    bool keep = upper ? j - i >= k : j - i <= k;
    y[e] = keep ? x[e] : T(0);
  }
}

template <typename T>
__global__ void cumsum_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  for (int64_t line = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; line < outer * inner;
       line += int64_t{gridDim.x} * blockDim.x) {
    int64_t o = line / inner, i = line % inner;
    T acc = T(0);
    for (int64_t s = 0; s < n; ++s) {
      int64_t idx = (o * n + (reverse ? n - 1 - s : s)) * inner + i;
      T v = x[idx];
      if (exclusive) {
        y[idx] = acc;
        acc += v;
      } else {
        acc += v;
        y[idx] = acc;
      }
    }
  }
}

template <typename T>
void trilu_typed(const void* x, void* y, int64_t total, int64_t rows, int64_t cols, int64_t k, bool upper, cudaStream_t s) {
  trilu_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), total, rows, cols, k, upper);
}

template <typename T>
void cumsum_typed(const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool ex, bool rev, cudaStream_t s) {
  cumsum_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), outer, n, inner, ex, rev);
}

}  // namespace

cudaError_t launch_trilu(const void* x, void* y, int bytes, int64_t batch, int64_t rows, int64_t cols, int64_t k,
                         bool upper, cudaStream_t s) {
  int64_t total = batch * rows * cols;
  if (total == 0) return cudaSuccess;
  switch (bytes) {
    case 1: trilu_typed<uint8_t>(x, y, total, rows, cols, k, upper, s); break;
    case 2: trilu_typed<uint16_t>(x, y, total, rows, cols, k, upper, s); break;
    case 4: trilu_typed<uint32_t>(x, y, total, rows, cols, k, upper, s); break;
    case 8: trilu_typed<uint64_t>(x, y, total, rows, cols, k, upper, s); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_cumsum(ElemType t, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                          bool reverse, cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: cumsum_typed<float>(x, y, outer, n, inner, exclusive, reverse, s); break;
    case ElemType::kF64: cumsum_typed<double>(x, y, outer, n, inner, exclusive, reverse, s); break;
    case ElemType::kI32: cumsum_typed<int32_t>(x, y, outer, n, inner, exclusive, reverse, s); break;
    case ElemType::kI64: cumsum_typed<int64_t>(x, y, outer, n, inner, exclusive, reverse, s); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
