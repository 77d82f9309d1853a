// The counter-based generator of Dropout masks and the random ops, one definition for the CPU
// kernel and the CUDA kernel (which includes this header-only file), so a
// seed gives the same mask on both devices: uniform in [0, 1) from
// (seed, counter), the top 24 bits of a splitmix64 draw. No dependencies.
#pragma once
#include <cmath>
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

// A standard normal draw from (seed, counter): Box-Muller on the uniforms of
// counters 2c and 2c+1, in double (the two devices' libm may differ in the
// last bit of a double, which the float a kernel stores almost never shows).
ORT_HOST_DEVICE double counter_normal(uint64_t seed, uint64_t counter) {
#ifndef __CUDA_ARCH__
  using std::cos; using std::log; using std::sqrt;
#endif
  double u1 = 1.0 - static_cast<double>(counter_uniform(seed, 2 * counter));  // (0, 1]: log is finite
  double u2 = static_cast<double>(counter_uniform(seed, 2 * counter + 1));
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// Element i of a random op's draw: RandomUniform[Like] in [low, high) and
// RandomNormal[Like] with (mean, scale) as `a`, `b`; Bernoulli is 1 where the
// uniform falls below the probability.
enum class RandomDraw : int { kUniform, kNormal };
ORT_HOST_DEVICE double random_draw(RandomDraw kind, uint64_t seed, uint64_t i, double a, double b) {
  if (kind == RandomDraw::kUniform) return a + (b - a) * static_cast<double>(counter_uniform(seed, i));
  return a + b * counter_normal(seed, i);
}
ORT_HOST_DEVICE bool bernoulli_draw(uint64_t seed, uint64_t i, double p) {
  return static_cast<double>(counter_uniform(seed, i)) < p;
}

}  // namespace ort_train
