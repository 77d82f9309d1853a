// CUDA kernels of the random ops: element i is numerics/counter_random.h's
// draw i from the node's seed, as on the CPU.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"
#include "numerics/counter_random.h"

namespace ort_train::cuda {

// out (float32/64) = RandomUniform/RandomNormal's draw, a and b as random_draw's.
cudaError_t launch_random_draw(RandomDraw kind, ElemType t, void* out, int64_t n, uint64_t seed, double a, double b,
                               cudaStream_t stream);
// out (float32/64, int32/64 or bool) = Bernoulli of the probabilities p (of type t_p, float32/64).
cudaError_t launch_bernoulli(ElemType t_p, const void* p, ElemType t_out, void* out, int64_t n, uint64_t seed,
                             cudaStream_t stream);

}  // namespace ort_train::cuda
