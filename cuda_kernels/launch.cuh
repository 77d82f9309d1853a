// What every kernel file shares: the block size, the grid for n elements in
// grid-stride loops, and block-wide sums and maxima in a fixed tree order (so
// a reduction gives the same bits on every run).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ort_train::cuda {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (at least 1, at most 2^20).
inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 1048576 ? 1048576 : b));
}

// The sum of v over a block of kThreads threads; buf holds kThreads values.
// Every thread must call it; every thread gets the result.
template <typename T>
__device__ T block_sum(T v, T* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  T out = buf[0];
  __syncthreads();
  return out;
}

template <typename T>
__device__ T block_max(T v, T* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] = fmax(buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  T out = buf[0];
  __syncthreads();
  return out;
}

}  // namespace ort_train::cuda
