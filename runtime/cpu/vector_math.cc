#include "runtime/cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/cpu/vector_math_wide.h"

#if defined(__x86_64__) && defined(__GLIBC__)
#include <immintrin.h>
#define ORT_TRAIN_LIBMVEC 1
extern "C" {
__m128 _ZGVbN4v_expf(__m128);
__m128 _ZGVbN4v_tanhf(__m128);
__m128 _ZGVbN4v_erff(__m128);
}
#endif

namespace ort_train {
namespace {

using wide::MathFn;

enum class Isa { kScalar, kSse4, kAvx2, kAvx512 };

Isa detect() {
#ifdef ORT_TRAIN_LIBMVEC
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
  return Isa::kSse4;  // x86-64-v2, the build's baseline
#else
  return Isa::kScalar;
#endif
}

Isa isa() {
  static const Isa chosen = detect();
  return chosen;
}

#ifdef ORT_TRAIN_LIBMVEC
void apply_sse4(MathFn fn, const float* x, float* y, int64_t n) {
  __m128 (*f)(__m128) = fn == MathFn::kExp ? _ZGVbN4v_expf : fn == MathFn::kTanh ? _ZGVbN4v_tanhf : _ZGVbN4v_erff;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, f(_mm_loadu_ps(x + i)));
  if (i < n) {  // the tail through the same function, padded with zeros
    float buf[4] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm_storeu_ps(buf, f(_mm_loadu_ps(buf)));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(float));
  }
}
#endif

void apply(MathFn fn, const float* x, float* y, int64_t n) {
  switch (isa()) {
#ifdef ORT_TRAIN_LIBMVEC
    case Isa::kAvx512: return wide::apply_avx512(fn, x, y, n);
    case Isa::kAvx2: return wide::apply_avx2(fn, x, y, n);
    case Isa::kSse4: return apply_sse4(fn, x, y, n);
#endif
    default:
      for (int64_t i = 0; i < n; ++i)
        y[i] = fn == MathFn::kExp ? std::exp(x[i]) : fn == MathFn::kTanh ? std::tanh(x[i]) : std::erf(x[i]);
  }
}

// Elements per pass through the temporaries below: small enough to stay in L1.
constexpr int64_t kBlock = 512;

constexpr float kRsqrt2 = 0.70710678118654752f;      // 1/sqrt(2)
constexpr float kSqrt2OverPi = 0.79788456080286536f;  // sqrt(2/pi)
constexpr float kRsqrt2Pi = 0.39894228040143268f;     // 1/sqrt(2 pi)
constexpr float kCubic = 0.044715f;

// x + bias for one block starting at element `at` of rows of length bias_n.
void add_bias(const float* x, const float* bias, int64_t bias_n, int64_t at, float* out, int64_t m) {
  if (!bias) {
    std::memcpy(out, x, static_cast<size_t>(m) * sizeof(float));
    return;
  }
  int64_t j = at % bias_n;
  for (int64_t i = 0; i < m; ++i) {
    out[i] = x[i] + bias[j];
    if (++j == bias_n) j = 0;
  }
}

// GELU's gate term for a block: erf(v / sqrt2), or with `tanh_form`
// tanh(sqrt(2/pi)(v + c v^3)); gelu(v) = 0.5 v (1 + gate).
void gelu_gate(const float* v, float* t, int64_t m, bool tanh_form) {
  if (tanh_form) {
    for (int64_t i = 0; i < m; ++i) t[i] = kSqrt2OverPi * (v[i] + kCubic * v[i] * v[i] * v[i]);
    apply(MathFn::kTanh, t, t, m);
  } else {
    for (int64_t i = 0; i < m; ++i) t[i] = v[i] * kRsqrt2;
    apply(MathFn::kErf, t, t, m);
  }
}

}  // namespace

void exp_f32(const float* x, float* y, int64_t n) { apply(MathFn::kExp, x, y, n); }
void tanh_f32(const float* x, float* y, int64_t n) { apply(MathFn::kTanh, x, y, n); }
void erf_f32(const float* x, float* y, int64_t n) { apply(MathFn::kErf, x, y, n); }

void sigmoid_f32(const float* x, float* y, int64_t n) {
  float e[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    for (int64_t i = 0; i < m; ++i) e[i] = -std::abs(x[b + i]);
    exp_f32(e, e, m);  // e^-|x| never overflows
    for (int64_t i = 0; i < m; ++i) {
      float s = 1.f / (1.f + e[i]);
      y[b + i] = x[b + i] >= 0.f ? s : e[i] * s;
    }
  }
}

void silu_f32(const float* x, float* y, int64_t n) {
  float s[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    sigmoid_f32(x + b, s, m);  // into a block of its own: y may be x (an in-place kernel)
    for (int64_t i = 0; i < m; ++i) y[b + i] = x[b + i] * s[i];
  }
}

void gelu_f32(const float* x, const float* bias, int64_t bias_n, float* y, int64_t n, bool tanh_form) {
  float v[kBlock], t[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    add_bias(x + b, bias, bias_n, b, v, m);
    gelu_gate(v, t, m, tanh_form);
    for (int64_t i = 0; i < m; ++i) y[b + i] = 0.5f * v[i] * (1.f + t[i]);
  }
}

void gelu_grad_f32(const float* dy, const float* x, const float* bias, int64_t bias_n, float* dx, int64_t n,
                   bool tanh_form) {
  float v[kBlock], t[kBlock], e[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    add_bias(x + b, bias, bias_n, b, v, m);
    gelu_gate(v, t, m, tanh_form);
    if (tanh_form) {
      // d/dx: 0.5(1 + t) + 0.5x(1 - t^2) sqrt(2/pi)(1 + 3c x^2), t = tanh(sqrt(2/pi)(x + c x^3))
      for (int64_t i = 0; i < m; ++i) {
        float d = 0.5f * (1.f + t[i]) +
                  0.5f * v[i] * (1.f - t[i] * t[i]) * kSqrt2OverPi * (1.f + 3.f * kCubic * v[i] * v[i]);
        dx[b + i] = dy[b + i] * d;
      }
    } else {
      // d/dx: 0.5(1 + erf(x/sqrt2)) + x exp(-x^2/2) / sqrt(2 pi)
      for (int64_t i = 0; i < m; ++i) e[i] = -0.5f * v[i] * v[i];
      exp_f32(e, e, m);
      for (int64_t i = 0; i < m; ++i) dx[b + i] = dy[b + i] * (0.5f * (1.f + t[i]) + v[i] * kRsqrt2Pi * e[i]);
    }
  }
}

const char* vector_math_isa() {
  switch (isa()) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kSse4: return "sse4";
    default: return "scalar";
  }
}

}  // namespace ort_train
