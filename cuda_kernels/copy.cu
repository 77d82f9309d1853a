#include "cuda_kernels/copy.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {


template <typename T>
__global__ void gather_kernel(const T* src, T* dst, int64_t n, CopyMap m) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = src[copy_map_offset(m, i)];
}

template <typename T>
__global__ void scatter_kernel(const T* src, T* dst, int64_t n, CopyMap m) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dst[copy_map_offset(m, i)] = src[i];
}


cudaError_t launch_sized(const void* src, void* dst, int64_t n, int bytes, const CopyMap& m, cudaStream_t s,
                         void (*k1)(const uint8_t*, uint8_t*, int64_t, CopyMap),
                         void (*k2)(const uint16_t*, uint16_t*, int64_t, CopyMap),
                         void (*k4)(const uint32_t*, uint32_t*, int64_t, CopyMap),
                         void (*k8)(const uint64_t*, uint64_t*, int64_t, CopyMap)) {
  if (n == 0) return cudaSuccess;
  switch (bytes) {
    case 1: k1<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), n, m); break;
    case 2: k2<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), n, m); break;
    case 4: k4<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), n, m); break;
    case 8: k8<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), n, m); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_gather_copy(const void* src, void* dst, int64_t n, int bytes, const CopyMap& m, cudaStream_t s) {
  return launch_sized(src, dst, n, bytes, m, s, gather_kernel<uint8_t>, gather_kernel<uint16_t>,
                                     gather_kernel<uint32_t>, gather_kernel<uint64_t>);
}

cudaError_t launch_scatter_copy(const void* src, void* dst, int64_t n, int bytes, const CopyMap& m, cudaStream_t s) {
  return launch_sized(src, dst, n, bytes, m, s, scatter_kernel<uint8_t>, scatter_kernel<uint16_t>,
                                      scatter_kernel<uint32_t>, scatter_kernel<uint64_t>);
}

}  // namespace ort_train::cuda
