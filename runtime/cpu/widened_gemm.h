// A 16-bit GEMM with float32 accumulation computed by OpenBLAS's sgemm: the
// operands are widened to float32 (exact: every float16 and bfloat16 is a
// float32), multiplied, and the result rounded to the 16-bit type once. What
// such a GEMM computes, at float32 speed: float16 always takes this path on
// the CPU (fp16_gemm.h), bfloat16 where oneDNN has no bfloat16 matmul for the
// CPU (bf16_gemm.h: oneDNN 2.6 wants AVX-512).
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "graph/status.h"
#include "runtime/cpu/blas.h"

namespace ort_train {

// The `rows` x `ld` block a matrix operand spans (its last row only as far as
// `cols`), widened to float32 with the same leading dimension.
template <typename Half>
const float* widen_operand(const Half* p, int64_t rows, int64_t cols, int64_t ld, std::vector<float>& buf) {
  size_t n = rows == 0 ? 0 : static_cast<size_t>((rows - 1) * ld + cols);
  buf.resize(n);
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(p[i]);
  return buf.data();
}

// C[m,n] = alpha * op(A) @ op(B) (+ bias on every row), row-major with leading
// dims; Out is float or the 16-bit type (rounded once, after the bias).
template <typename Half, typename Out>
Status widened_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Half* a, int64_t lda,
                    const Half* b, int64_t ldb, Out* c, int64_t ldc, const Half* bias) {
  if (m == 0 || n == 0) return Status::Ok();
  // Per thread: batched products call this from several threads at once.
  thread_local std::vector<float> wa, wb, wc;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = Out(bias ? static_cast<float>(bias[j]) : 0.f);
    return Status::Ok();
  }
  const float* fa = ta ? widen_operand(a, k, m, lda, wa) : widen_operand(a, m, k, lda, wa);
  const float* fb = tb ? widen_operand(b, n, k, ldb, wb) : widen_operand(b, k, n, ldb, wb);
  if constexpr (std::is_same_v<Out, float>) {
    gemm(ta, tb, m, n, k, alpha, fa, lda, fb, ldb, 0.f, c, ldc);
  } else {
    wc.resize(static_cast<size_t>(m * n));
    if (bias)  // C starts as the bias rows: sgemm adds the product to it (beta 1)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) wc[static_cast<size_t>(i * n + j)] = static_cast<float>(bias[j]);
    gemm(ta, tb, m, n, k, alpha, fa, lda, fb, ldb, bias ? 1.f : 0.f, wc.data(), n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = Half(wc[static_cast<size_t>(i * n + j)]);
  }
  return Status::Ok();
}

}  // namespace ort_train
