// The counter-based generator of Dropout masks, one definition for the CPU
// kernel and the CUDA kernel (which includes this header-only file), so a
// seed gives the same mask on both devices: uniform in [0, 1) from
// (seed, counter), the top 24 bits of a splitmix64 draw. No dependencies.
#pragma once
#include <cstdint>

#include "numerics/host_device.h"

namespace ort_train {

// splitmix64's finalizer: a bijective 64-bit mix.
ORT_HOST_DEVICE uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

ORT_HOST_DEVICE float counter_uniform(uint64_t seed, uint64_t counter) {
  uint64_t z = mix64(seed + (counter + 1) * 0x9E3779B97F4A7C15ull);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

}  // namespace ort_train
