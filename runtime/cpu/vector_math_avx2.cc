// AVX2 body of vector_math.h: glibc's 8-lane libmvec functions.
#include <immintrin.h>

#include <cstring>

#include "runtime/cpu/vector_math_wide.h"

#if defined(__x86_64__) && defined(__GLIBC__)
extern "C" {
__m256 _ZGVdN8v_expf(__m256);
__m256 _ZGVdN8v_tanhf(__m256);
__m256 _ZGVdN8v_erff(__m256);
}

namespace ort_train::wide {

void apply_avx2(MathFn fn, const float* x, float* y, int64_t n) {
  __m256 (*f)(__m256) = fn == MathFn::kExp ? _ZGVdN8v_expf : fn == MathFn::kTanh ? _ZGVdN8v_tanhf : _ZGVdN8v_erff;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {  // the tail through the same function, padded with zeros
    float buf[8] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm256_storeu_ps(buf, f(_mm256_loadu_ps(buf)));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace ort_train::wide
#endif
