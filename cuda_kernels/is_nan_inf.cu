#include "cuda_kernels/is_nan_inf.h"
#include "cuda_kernels/launch.cuh"
#include "numerics/is_nan_inf.h"

namespace ort_train::cuda {
namespace {

template <typename T>
__global__ void float_class_kernel(const T* x, bool* out, int64_t n, bool nan, bool neg, bool pos) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = float_class_test(x[i], nan, neg, pos);
}

}  // namespace

cudaError_t launch_float_class(ElemType t, const void* x, bool* out, int64_t n, bool nan, bool neg, bool pos,
                               cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: float_class_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(x), out, n, nan, neg, pos); break;
    case ElemType::kF64: float_class_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const double*>(x), out, n, nan, neg, pos); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
