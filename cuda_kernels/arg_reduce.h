// CUDA kernel of ArgMax and ArgMin: one thread per (outer, inner) position of
// the input viewed as [outer, n, inner], numerics/arg_reduce.h's comparison.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

cudaError_t launch_arg_reduce(ElemType t, const void* in, int64_t* out, int64_t outer, int64_t n, int64_t inner,
                              bool is_max, bool select_last, cudaStream_t stream);

}  // namespace ort_train::cuda
