// CUDA kernel of IsNaN and IsInf: numerics/is_nan_inf.h's test per element.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

cudaError_t launch_float_class(ElemType t, const void* x, bool* out, int64_t n, bool nan, bool negative_inf,
                               bool positive_inf, cudaStream_t stream);

}  // namespace ort_train::cuda
