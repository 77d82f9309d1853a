#include <cstring>

#include "cuda_kernels/index_ops.h"
#include "cuda_kernels/launch.cuh"
#include "numerics/arg_reduce.h"
#include "numerics/index_ops.h"

namespace ort_train::cuda {
namespace {

template <typename T>
__global__ void one_hot_kernel(const int64_t* indices, int64_t outer, int64_t depth, int64_t inner, T off, T on,
                               T* out) {
  const int64_t n = outer * depth * inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e % inner, pos = (e / inner) % depth, o = e / (inner * depth);
    out[e] = one_hot_position(indices[o * inner + i], depth) == pos ? on : off;
  }
}

template <typename T>
__global__ void eye_kernel(int64_t rows, int64_t cols, int64_t k, T* out) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < rows * cols; e += int64_t{gridDim.x} * blockDim.x)
    out[e] = e % cols - e / cols == k ? T(1) : T(0);
}

template <typename T>
__global__ void hardmax_kernel(const T* x, T* out, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < outer * inner; r += int64_t{gridDim.x} * blockDim.x) {
    const int64_t base = (r / inner) * n * inner + r % inner;
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
      if (arg_reduce_replaces(x[base + i * inner], x[base + best * inner], true, false)) best = i;
    for (int64_t i = 0; i < n; ++i) out[base + i * inner] = i == best ? T(1) : T(0);
  }
}

template <typename T>
__global__ void reverse_kernel(const T* x, T* out, int64_t d0, int64_t d1, int64_t inner, bool batch_major,
                               const int64_t* lens) {
  const int64_t n = d0 * d1 * inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e % inner, a1 = (e / inner) % d1, a0 = e / (inner * d1);
    const int64_t b = batch_major ? a0 : a1, t = batch_major ? a1 : a0;
    const int64_t from = reversed_time(t, lens[b]);
    out[e] = x[((batch_major ? a0 : from) * d1 + (batch_major ? from : a1)) * inner + i];
  }
}

template <typename T>
cudaError_t one_hot_typed(const int64_t* idx, int64_t outer, int64_t depth, int64_t inner, const void* off_on,
                          void* out, cudaStream_t s) {
  T v[2];
  std::memcpy(v, off_on, sizeof v);
  one_hot_kernel<T><<<blocks_for(outer * depth * inner), kThreads, 0, s>>>(idx, outer, depth, inner, v[0], v[1],
                                                                           static_cast<T*>(out));
  return cudaGetLastError();
}

template <typename T>
cudaError_t reverse_typed(const void* x, void* out, int64_t d0, int64_t d1, int64_t inner, bool bm, const int64_t* lens,
                          cudaStream_t s) {
  reverse_kernel<T><<<blocks_for(d0 * d1 * inner), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(out), d0,
                                                                     d1, inner, bm, lens);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_one_hot(int element_bytes, const int64_t* indices, int64_t outer, int64_t depth, int64_t inner,
                           const void* off_on_host, void* out, cudaStream_t s) {
  if (outer * depth * inner == 0) return cudaSuccess;
  switch (element_bytes) {  // the values move as bits: any dtype of these sizes
    case 1: return one_hot_typed<uint8_t>(indices, outer, depth, inner, off_on_host, out, s);
    case 2: return one_hot_typed<uint16_t>(indices, outer, depth, inner, off_on_host, out, s);
    case 4: return one_hot_typed<uint32_t>(indices, outer, depth, inner, off_on_host, out, s);
    case 8: return one_hot_typed<uint64_t>(indices, outer, depth, inner, off_on_host, out, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_eye_like(ElemType t, int64_t rows, int64_t cols, int64_t k, void* out, cudaStream_t s) {
  if (rows * cols == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(rows * cols);
  switch (t) {
    case ElemType::kF32: eye_kernel<<<blocks, kThreads, 0, s>>>(rows, cols, k, static_cast<float*>(out)); break;
    case ElemType::kF64: eye_kernel<<<blocks, kThreads, 0, s>>>(rows, cols, k, static_cast<double*>(out)); break;
    case ElemType::kI32: eye_kernel<<<blocks, kThreads, 0, s>>>(rows, cols, k, static_cast<int32_t*>(out)); break;
    case ElemType::kI64: eye_kernel<<<blocks, kThreads, 0, s>>>(rows, cols, k, static_cast<int64_t*>(out)); break;
    case ElemType::kBool: eye_kernel<<<blocks, kThreads, 0, s>>>(rows, cols, k, static_cast<bool*>(out)); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_hardmax(ElemType t, const void* x, void* out, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t s) {
  if (outer * inner == 0 || n == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(outer * inner);
  switch (t) {
    case ElemType::kF32: hardmax_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const float*>(x), static_cast<float*>(out), outer, n, inner); break;
    case ElemType::kF64: hardmax_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const double*>(x), static_cast<double*>(out), outer, n, inner); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_reverse_sequence(int element_bytes, const void* x, void* out, int64_t d0, int64_t d1, int64_t inner,
                                    bool batch_major, const int64_t* lens, cudaStream_t s) {
  if (d0 * d1 * inner == 0) return cudaSuccess;
  switch (element_bytes) {
    case 1: return reverse_typed<uint8_t>(x, out, d0, d1, inner, batch_major, lens, s);
    case 2: return reverse_typed<uint16_t>(x, out, d0, d1, inner, batch_major, lens, s);
    case 4: return reverse_typed<uint32_t>(x, out, d0, d1, inner, batch_major, lens, s);
    case 8: return reverse_typed<uint64_t>(x, out, d0, d1, inner, batch_major, lens, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ort_train::cuda
