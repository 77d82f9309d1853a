// exp for float that the compiler can vectorize: no libm call, no branch.
// The loss kernels call it for every logit (BERT's vocabulary: 31M a step
// each way), where libm's double exp per element was a fifth of the step.
//
// (It vectorizes only with -fno-trapping-math, which the core is built with:
// the clamp's compares may otherwise trap, so GCC keeps them as branches.)
//
// Cody-Waite reduction x = n·ln2 + r, |r| <= ln2/2, then Cephes' degree-6
// polynomial for e^r, scaled by 2^n built in the exponent bits. Relative
// error within 2 ulp of float over the clamped range (fast_exp_test.cc);
// inputs are clamped to [-87.3, 88], so very negative inputs give about
// 1e-38 instead of a subnormal or 0 — below anything a float sum of
// probabilities can see.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace ort_train {

inline float fast_exp(float in) {
  // NaN fails both clamps and would reach the float-to-int conversion, which
  // is undefined for it (the kernel-executing fuzz target found a logit of
  // NaN there): it is computed as 0 and given back as NaN, as exp does.
  const bool nan = in != in;
  float x = nan ? 0.f : in;
  x = x < -87.33654f ? -87.33654f : x;
  x = x > 88.0f ? 88.0f : x;
  const float n = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;  // round to nearest (1.5·2^23 trick)
  float r = x - n * 0.693145751953125f;  // ln2, high part (exact in float)
  r = r - n * 1.428606765330187e-06f;     // ln2, low part
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return nan ? in : p * scale;
}

}  // namespace ort_train
