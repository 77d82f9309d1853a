#include "cuda_kernels/arg_reduce.h"
#include "cuda_kernels/launch.cuh"
#include "numerics/arg_reduce.h"

namespace ort_train::cuda {
namespace {

// A thread per output: the axis is walked serially, as the CPU kernel walks
// it, so the two agree on ties and NaN without a cross-thread merge.
template <typename T>
__global__ void arg_reduce_kernel(const T* in, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool is_max,
                                  bool select_last) {
  const int64_t total = outer * inner;
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < total; r += int64_t{gridDim.x} * blockDim.x) {
    const T* row = in + (r / inner) * n * inner + r % inner;
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
      if (arg_reduce_replaces(row[i * inner], row[best * inner], is_max, select_last)) best = i;
    out[r] = best;
  }
}

template <typename T>
cudaError_t typed(const void* in, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool is_max, bool last,
                  cudaStream_t s) {
  arg_reduce_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(static_cast<const T*>(in), out, outer, n, inner,
                                                                      is_max, last);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_arg_reduce(ElemType t, const void* in, int64_t* out, int64_t outer, int64_t n, int64_t inner,
                              bool is_max, bool select_last, cudaStream_t s) {
  if (outer * inner == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: return typed<float>(in, out, outer, n, inner, is_max, select_last, s);
    case ElemType::kF64: return typed<double>(in, out, outer, n, inner, is_max, select_last, s);
    case ElemType::kI32: return typed<int32_t>(in, out, outer, n, inner, is_max, select_last, s);
    case ElemType::kI64: return typed<int64_t>(in, out, outer, n, inner, is_max, select_last, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ort_train::cuda
