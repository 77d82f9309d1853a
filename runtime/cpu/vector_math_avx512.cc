// AVX-512 body of vector_math.h: glibc's 16-lane libmvec functions.
#include <immintrin.h>

#include <cstring>

#include "runtime/cpu/vector_math_wide.h"

#if defined(__x86_64__) && defined(__GLIBC__)
extern "C" {
__m512 _ZGVeN16v_expf(__m512);
__m512 _ZGVeN16v_tanhf(__m512);
__m512 _ZGVeN16v_erff(__m512);
}

namespace ort_train::wide {

void apply_avx512(MathFn fn, const float* x, float* y, int64_t n) {
  __m512 (*f)(__m512) = fn == MathFn::kExp ? _ZGVeN16v_expf : fn == MathFn::kTanh ? _ZGVeN16v_tanhf : _ZGVeN16v_erff;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
  if (i < n) {  // the tail through the same function, padded with zeros
    float buf[16] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm512_storeu_ps(buf, f(_mm512_loadu_ps(buf)));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace ort_train::wide
#endif
