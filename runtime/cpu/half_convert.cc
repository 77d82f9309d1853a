#include "runtime/cpu/half_convert.h"

#include <cstring>

#include "runtime/cpu/parallel.h"
#include "runtime/cpu/simd_clones.h"

namespace ort_train {

ORT_TRAIN_SIMD_CLONES void float_to_bfloat16(const float* src, BFloat16* dst, int64_t n) {
  static_assert(sizeof(BFloat16) == 2);
  uint16_t* out = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, src + i, 4);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t quiet_nan = ((x >> 16) & 0x8000u) | 0x7fc0u;
    out[i] = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

ORT_TRAIN_SIMD_CLONES void bfloat16_to_float(const BFloat16* src, float* dst, int64_t n) {
  const uint16_t* in = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(dst + i, &x, 4);
  }
}

namespace {
constexpr int64_t kGrain = 1 << 14;  // elements per task
}  // namespace

void parallel_float_to_bfloat16(const float* src, BFloat16* dst, int64_t n) {
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) { float_to_bfloat16(src + b, dst + b, e - b); });
}

void parallel_bfloat16_to_float(const BFloat16* src, float* dst, int64_t n) {
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) { bfloat16_to_float(src + b, dst + b, e - b); });
}

void widen_half(const Tensor& h, Tensor& f) {
  if (h.dtype() == DType::kBFloat16) {
    parallel_bfloat16_to_float(h.data<BFloat16>(), f.data<float>(), h.numel());
    return;
  }
  const Float16* src = h.data<Float16>();
  float* dst = f.data<float>();
  parallel_for(h.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = static_cast<float>(src[i]);
  });
}

void narrow_to_half(const Tensor& f, Tensor& h) {
  if (h.dtype() == DType::kBFloat16) {
    parallel_float_to_bfloat16(f.data<float>(), h.data<BFloat16>(), f.numel());
    return;
  }
  const float* src = f.data<float>();
  Float16* dst = h.data<Float16>();
  parallel_for(f.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = Float16(src[i]);
  });
}

void round_to_half(DType half, float* x, int64_t n) {
  if (half == DType::kBFloat16) {
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(BFloat16(x[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(Float16(x[i]));
  }
}

}  // namespace ort_train
