// Softmax / LogSoftmax over the middle axis of an [outer, n, inner] view, and
// their gradients (SoftmaxGrad: Y (dY - sum(dY Y)); LogSoftmaxGrad: dY - exp(Y) sum(dY)).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

cudaError_t launch_softmax(bool log, ElemType t, const void* x, void* y, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t stream);
cudaError_t launch_softmax_grad(bool log, ElemType t, const void* dy, const void* y, void* dx, int64_t outer, int64_t n,
                                int64_t inner, cudaStream_t stream);

}  // namespace ort_train::cuda
