// Dropout and DropoutGrad. The keep decision is the CPU kernel's counter-based
// generator (splitmix64 of seed + counter, runtime/cpu/kernels/dropout.cc), so
// a seed gives the same mask on either device, whatever the launch shape.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

// Uniform in [0, 1) from (seed, counter): must equal counter_uniform in
// runtime/cpu/kernels/dropout.cc bit for bit (tests/runtime/cuda/device_math_test.cc).
ORT_HOST_DEVICE uint64_t dropout_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
ORT_HOST_DEVICE float dropout_uniform(uint64_t seed, uint64_t counter) {
  uint64_t z = dropout_mix64(seed + (counter + 1) * 0x9E3779B97F4A7C15ull);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// mask may be null.
cudaError_t launch_dropout(ElemType t, const void* x, void* y, bool* mask, int64_t n, uint64_t seed, float drop_below,
                           double scale, cudaStream_t stream);
cudaError_t launch_dropout_grad(ElemType t, const void* dy, const bool* mask, void* dx, int64_t n, double scale,
                                cudaStream_t stream);
// Fills n bools with true (the mask of an inference-mode Dropout).
cudaError_t launch_fill_true(bool* mask, int64_t n, cudaStream_t stream);

}  // namespace ort_train::cuda
