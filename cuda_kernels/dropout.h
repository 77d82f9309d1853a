// Dropout and DropoutGrad. The keep decision is the CPU kernel's counter-based
// generator (numerics/counter_random.h, shared), so a seed gives the same mask
// on either device, whatever the launch shape.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"
#include "numerics/counter_random.h"  // the CPU kernel's generator, header-only

namespace ort_train::cuda {

// mask may be null.
cudaError_t launch_dropout(ElemType t, const void* x, void* y, bool* mask, int64_t n, uint64_t seed, float drop_below,
                           double scale, cudaStream_t stream);
cudaError_t launch_dropout_grad(ElemType t, const void* dy, const bool* mask, void* dx, int64_t n, double scale,
                                cudaStream_t stream);
// Fills n bools with true (the mask of an inference-mode Dropout).
cudaError_t launch_fill_true(bool* mask, int64_t n, cudaStream_t stream);

}  // namespace ort_train::cuda
