#include <cub/device/device_radix_sort.cuh>

#include <cmath>

#include "cuda_kernels/gather.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {



__device__ __forceinline__ int64_t index_at(const void* p, bool i32, int64_t j) {
  return i32 ? static_cast<const int32_t*>(p)[j] : static_cast<const int64_t*>(p)[j];
}

template <typename T>
__global__ void gather_kernel(const T* data, const void* indices, bool i32, T* out, int64_t outer, int64_t n, int64_t m,
                              int64_t inner, T invalid, IndexFaultSite fault) {
  int64_t total = outer * m * inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    int64_t i = e % inner, j = (e / inner) % m, o = e / (inner * m);
    int64_t raw = index_at(indices, i32, j), k = wrap_axis_index(raw, n);
    if (k >= 0) {
      out[e] = data[(o * n + k) * inner + i];
    } else {
      out[e] = invalid;
      report_index_fault(fault, IndexFaultKind::kAxisIndex, raw, j, -n, n);
    }
  }
}

template <typename T>
__global__ void gather_grad_atomic_kernel(const T* dy, const void* indices, bool i32, T* dx, int64_t outer, int64_t n,
                                          int64_t m, int64_t inner, IndexFaultSite fault) {
  int64_t total = outer * m * inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    int64_t i = e % inner, j = (e / inner) % m, o = e / (inner * m);
    int64_t raw = index_at(indices, i32, j), k = wrap_axis_index(raw, n);
    if (k >= 0) atomicAdd(dx + (o * n + k) * inner + i, dy[e]);
    else report_index_fault(fault, IndexFaultKind::kAxisIndex, raw, j, -n, n);
  }
}

// Keys: the wrapped index (n for an invalid one, sorted last, skipped and recorded); values: positions.
__global__ void sort_inputs_kernel(const void* indices, bool i32, int64_t n, int64_t m, int64_t* keys, int64_t* pos,
                                   IndexFaultSite fault) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < m; j += int64_t{gridDim.x} * blockDim.x) {
    int64_t raw = index_at(indices, i32, j), k = wrap_axis_index(raw, n);
    if (k < 0) report_index_fault(fault, IndexFaultKind::kAxisIndex, raw, j, -n, n);
    keys[j] = k >= 0 ? k : n;
    pos[j] = j;
  }
}

// Thread (p, o, i) with p the first of a run of equal keys sums the run in position order.
template <typename T>
__global__ void gather_grad_sorted_kernel(const T* dy, const int64_t* keys, const int64_t* pos, T* dx, int64_t outer,
                                          int64_t n, int64_t m, int64_t inner) {
  int64_t total = m * outer * inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    int64_t i = e % inner, o = (e / inner) % outer, p = e / (inner * outer);
    int64_t k = keys[p];
    if (k >= n || (p > 0 && keys[p - 1] == k)) continue;
    T acc = T(0);
    for (int64_t q = p; q < m && keys[q] == k; ++q) acc += dy[(o * m + pos[q]) * inner + i];
    dx[(o * n + k) * inner + i] = acc;
  }
}

size_t align(size_t b) { return (b + 255) / 256 * 256; }

}  // namespace

cudaError_t launch_gather(const void* data, int bytes, bool is_float, const void* indices, bool i32, void* out,
                          int64_t outer, int64_t n, int64_t m, int64_t inner, IndexFaultSite fault, cudaStream_t s) {
  int64_t total = outer * m * inner;
  if (total == 0) return cudaSuccess;
  switch (bytes) {
    case 1: gather_kernel<uint8_t><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const uint8_t*>(data), indices, i32, static_cast<uint8_t*>(out), outer, n, m, inner, 0, fault); break;
    case 2: gather_kernel<uint16_t><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const uint16_t*>(data), indices, i32, static_cast<uint16_t*>(out), outer, n, m, inner, 0, fault); break;
    case 4:
      if (is_float) gather_kernel<float><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const float*>(data), indices, i32, static_cast<float*>(out), outer, n, m, inner, NAN, fault);
      else gather_kernel<uint32_t><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const uint32_t*>(data), indices, i32, static_cast<uint32_t*>(out), outer, n, m, inner, 0, fault);
      break;
    case 8:
      if (is_float) gather_kernel<double><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const double*>(data), indices, i32, static_cast<double*>(out), outer, n, m, inner, NAN, fault);
      else gather_kernel<uint64_t><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const uint64_t*>(data), indices, i32, static_cast<uint64_t*>(out), outer, n, m, inner, 0, fault);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

size_t gather_grad_scratch_bytes(int64_t m) {
  size_t sort_bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int64_t*>(nullptr),
                                  static_cast<int64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
                                  static_cast<int64_t*>(nullptr), static_cast<int>(m));
  return 4 * align(static_cast<size_t>(m) * sizeof(int64_t)) + align(sort_bytes);
}

cudaError_t launch_gather_grad(ElemType t, const void* dy, const void* indices, bool i32, void* dx, int64_t outer,
                               int64_t n, int64_t m, int64_t inner, bool deterministic, void* scratch,
                               size_t scratch_bytes, IndexFaultSite fault, cudaStream_t s) {
  if (outer * m * inner == 0) return cudaSuccess;
  if (t != ElemType::kF32 && t != ElemType::kF64) return cudaErrorInvalidValue;
  if (!deterministic) {
    if (t == ElemType::kF32)
      gather_grad_atomic_kernel<float><<<blocks_for(outer * m * inner), kThreads, 0, s>>>(static_cast<const float*>(dy), indices, i32, static_cast<float*>(dx), outer, n, m, inner, fault);
    else
      gather_grad_atomic_kernel<double><<<blocks_for(outer * m * inner), kThreads, 0, s>>>(static_cast<const double*>(dy), indices, i32, static_cast<double*>(dx), outer, n, m, inner, fault);
    return cudaGetLastError();
  }
  size_t slot = align(static_cast<size_t>(m) * sizeof(int64_t));
  auto* base = static_cast<char*>(scratch);
  auto* keys_in = reinterpret_cast<int64_t*>(base);
  auto* keys_out = reinterpret_cast<int64_t*>(base + slot);
  auto* pos_in = reinterpret_cast<int64_t*>(base + 2 * slot);
  auto* pos_out = reinterpret_cast<int64_t*>(base + 3 * slot);
  void* sort_temp = base + 4 * slot;
  size_t sort_bytes = scratch_bytes - 4 * slot;
  sort_inputs_kernel<<<blocks_for(m), kThreads, 0, s>>>(indices, i32, n, m, keys_in, pos_in, fault);
  // Keys are below 2^(bits) with bits enough for n: fewer radix passes.
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) <= n) ++bits;
  cudaError_t e = cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, keys_in, keys_out, pos_in, pos_out,
                                                  static_cast<int>(m), 0, bits, s);
  if (e != cudaSuccess) return e;
  if (t == ElemType::kF32)
    gather_grad_sorted_kernel<float><<<blocks_for(m * outer * inner), kThreads, 0, s>>>(static_cast<const float*>(dy), keys_out, pos_out, static_cast<float*>(dx), outer, n, m, inner);
  else
    gather_grad_sorted_kernel<double><<<blocks_for(m * outer * inner), kThreads, 0, s>>>(static_cast<const double*>(dy), keys_out, pos_out, static_cast<double*>(dx), outer, n, m, inner);
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
