// The two 16-bit float storage types, IEEE binary16 (Float16) and bfloat16
// (BFloat16), as plain bit patterns with conversions to and from float that
// round to nearest, ties to even (what CUDA's __float2half_rn, numpy and
// torch do). The conversions are integer arithmetic only, so the same code
// runs in CUDA kernels and on the host, and the host tests check both.
// Arithmetic is done in float: convert, compute, convert back.
#pragma once
#include <cstdint>
#ifndef __CUDA_ARCH__
#include <cstring>
#endif

#include "numerics/host_device.h"

namespace ort_train {

ORT_HOST_DEVICE uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

ORT_HOST_DEVICE float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// float -> binary16, round to nearest even; overflow gives infinity, NaN stays a (quiet) NaN.
ORT_HOST_DEVICE uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return static_cast<uint16_t>(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds past 65504
  if (a < 0x38800000u) {  // below 2^-14: a subnormal half (units of 2^-24) or zero
    uint32_t e = a >> 23;
    if (e < 102) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14..24
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t q = (a - 0x38000000u) >> 13;  // rebias the exponent (127 -> 15), keep 10 mantissa bits
  uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;  // a carry into the exponent is still correct
  return static_cast<uint16_t>(sign | q);
}

ORT_HOST_DEVICE float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) {  // subnormal or zero: m * 2^-24, exact in float
    float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// float -> bfloat16 (the top 16 bits of a float), round to nearest even; NaN stays a quiet NaN.
ORT_HOST_DEVICE uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

ORT_HOST_DEVICE float bfloat16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  ORT_HOST_DEVICE explicit Float16(float f) : bits(float_to_half_bits(f)) {}
  ORT_HOST_DEVICE explicit operator float() const { return half_bits_to_float(bits); }
  ORT_HOST_DEVICE static Float16 from_bits(uint16_t b) {
    Float16 h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  ORT_HOST_DEVICE explicit BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  ORT_HOST_DEVICE explicit operator float() const { return bfloat16_bits_to_float(bits); }
  ORT_HOST_DEVICE static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2, "16-bit storage types");

}  // namespace ort_train
