#include <cmath>

#include "cuda_kernels/softmax.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {




// An all -inf row shifts by 0 so exp gives 0 and the result matches the CPU path.
template <typename T>
__device__ __forceinline__ T finite_shift(T mx) {
  return isinf(mx) && mx < T(0) ? T(0) : mx;
}

// inner == 1: one block per contiguous row. y may alias x.
template <typename T, bool kLog>
__global__ void softmax_rows(const T* x, T* y, int64_t n) {
  __shared__ T buf[kThreads];
  const T* xr = x + blockIdx.x * n;
  T* yr = y + blockIdx.x * n;
  T mx = -INFINITY;
  for (int64_t k = threadIdx.x; k < n; k += kThreads) mx = fmax(mx, xr[k]);
  mx = finite_shift(block_max(mx, buf));
  T sum = 0;
  for (int64_t k = threadIdx.x; k < n; k += kThreads) sum += exp(xr[k] - mx);
  sum = block_sum(sum, buf);
  if (kLog) {
    T log_sum = log(sum);
    for (int64_t k = threadIdx.x; k < n; k += kThreads) yr[k] = (xr[k] - mx) - log_sum;
  } else {
    T inv = T(1) / sum;
    for (int64_t k = threadIdx.x; k < n; k += kThreads) yr[k] = exp(xr[k] - mx) * inv;
  }
}

// inner > 1: one thread per (outer, inner) column, striding by inner.
template <typename T, bool kLog>
__global__ void softmax_columns(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < outer * inner; c += int64_t{gridDim.x} * blockDim.x) {
    int64_t base = (c / inner) * n * inner + c % inner;
    T mx = -INFINITY;
    for (int64_t k = 0; k < n; ++k) mx = fmax(mx, x[base + k * inner]);
    mx = finite_shift(mx);
    T sum = 0;
    for (int64_t k = 0; k < n; ++k) sum += exp(x[base + k * inner] - mx);
    if (kLog) {
      T log_sum = log(sum);
      for (int64_t k = 0; k < n; ++k) y[base + k * inner] = (x[base + k * inner] - mx) - log_sum;
    } else {
      T inv = T(1) / sum;
      for (int64_t k = 0; k < n; ++k) y[base + k * inner] = exp(x[base + k * inner] - mx) * inv;
    }
  }
}

template <typename T, bool kLog>
__global__ void softmax_grad_rows(const T* dy, const T* y, T* dx, int64_t n) {
  __shared__ T buf[kThreads];
  int64_t base = blockIdx.x * n;
  T s = 0;
  for (int64_t k = threadIdx.x; k < n; k += kThreads) s += kLog ? dy[base + k] : dy[base + k] * y[base + k];
  s = block_sum(s, buf);
  for (int64_t k = threadIdx.x; k < n; k += kThreads) {
    int64_t i = base + k;
    dx[i] = kLog ? dy[i] - exp(y[i]) * s : y[i] * (dy[i] - s);
  }
}

template <typename T, bool kLog>
__global__ void softmax_grad_columns(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < outer * inner; c += int64_t{gridDim.x} * blockDim.x) {
    int64_t base = (c / inner) * n * inner + c % inner;
    T s = 0;
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = base + k * inner;
      s += kLog ? dy[i] : dy[i] * y[i];
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = base + k * inner;
      dx[i] = kLog ? dy[i] - exp(y[i]) * s : y[i] * (dy[i] - s);
    }
  }
}

unsigned column_blocks(int64_t columns) {
  int64_t b = (columns + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

template <typename T, bool kLog>
void softmax_typed(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t s) {
  if (inner == 1) softmax_rows<T, kLog><<<static_cast<unsigned>(outer), kThreads, 0, s>>>(x, y, n);
  else softmax_columns<T, kLog><<<column_blocks(outer * inner), kThreads, 0, s>>>(x, y, outer, n, inner);
}

template <typename T, bool kLog>
void softmax_grad_typed(const T* dy, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, cudaStream_t s) {
  if (inner == 1) softmax_grad_rows<T, kLog><<<static_cast<unsigned>(outer), kThreads, 0, s>>>(dy, y, dx, n);
  else softmax_grad_columns<T, kLog><<<column_blocks(outer * inner), kThreads, 0, s>>>(dy, y, dx, outer, n, inner);
}

}  // namespace

cudaError_t launch_softmax(bool log, ElemType t, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (outer > 2147483647) return cudaErrorInvalidValue;
  if (t == ElemType::kF32) {
    if (log) softmax_typed<float, true>(static_cast<const float*>(x), static_cast<float*>(y), outer, n, inner, s);
    else softmax_typed<float, false>(static_cast<const float*>(x), static_cast<float*>(y), outer, n, inner, s);
  } else if (t == ElemType::kF64) {
    if (log) softmax_typed<double, true>(static_cast<const double*>(x), static_cast<double*>(y), outer, n, inner, s);
    else softmax_typed<double, false>(static_cast<const double*>(x), static_cast<double*>(y), outer, n, inner, s);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_softmax_grad(bool log, ElemType t, const void* dy, const void* y, void* dx, int64_t outer, int64_t n,
                                int64_t inner, cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (outer > 2147483647) return cudaErrorInvalidValue;
  if (t == ElemType::kF32) {
    auto* a = static_cast<const float*>(dy);
    auto* b = static_cast<const float*>(y);
    auto* c = static_cast<float*>(dx);
    if (log) softmax_grad_typed<float, true>(a, b, c, outer, n, inner, s);
    else softmax_grad_typed<float, false>(a, b, c, outer, n, inner, s);
  } else if (t == ElemType::kF64) {
    auto* a = static_cast<const double*>(dy);
    auto* b = static_cast<const double*>(y);
    auto* c = static_cast<double*>(dx);
    if (log) softmax_grad_typed<double, true>(a, b, c, outer, n, inner, s);
    else softmax_grad_typed<double, false>(a, b, c, outer, n, inner, s);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
