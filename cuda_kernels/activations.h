// CUDA kernels of the parameterised activations and the trigonometric/
// hyperbolic functions, and of ActivationGrad: the element arithmetic is
// numerics/activations.h's, the CPU kernels' own.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"
#include "numerics/activations.h"

namespace ort_train::cuda {

// out = f(in) over n elements (float32/64; Shrink also int32/int64).
cudaError_t launch_activation(Activation op, ElemType t, const void* in, void* out, int64_t n,
                              const ActivationParams& p, cudaStream_t stream);
// dx = dy * f'(x) over n elements (float32/64).
cudaError_t launch_activation_grad(Activation op, ElemType t, const void* dy, const void* x, void* dx, int64_t n,
                                   const ActivationParams& p, cudaStream_t stream);

}  // namespace ort_train::cuda
