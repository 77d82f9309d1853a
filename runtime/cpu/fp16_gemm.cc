#include "runtime/cpu/fp16_gemm.h"

#include <vector>

#include "runtime/cpu/blas.h"

namespace ort_train {
namespace {

// The `rows` x `ld` block a matrix operand spans (its last row only as far as
// `cols`), widened to float32 with the same leading dimension.
const float* widen(const Float16* p, int64_t rows, int64_t cols, int64_t ld, std::vector<float>& buf) {
  size_t n = rows == 0 ? 0 : static_cast<size_t>((rows - 1) * ld + cols);
  buf.resize(n);
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(p[i]);
  return buf.data();
}

template <typename Out>
Status run(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Float16* a, int64_t lda,
           const Float16* b, int64_t ldb, Out* c, int64_t ldc, const Float16* bias) {
  if (m == 0 || n == 0) return Status::Ok();
  // Per thread: batched products call this from several threads at once.
  thread_local std::vector<float> wa, wb, wc;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = Out(bias ? static_cast<float>(bias[j]) : 0.f);
    return Status::Ok();
  }
  const float* fa = ta ? widen(a, k, m, lda, wa) : widen(a, m, k, lda, wa);
  const float* fb = tb ? widen(b, n, k, ldb, wb) : widen(b, k, n, ldb, wb);
  if constexpr (std::is_same_v<Out, float>) {
    gemm(ta, tb, m, n, k, alpha, fa, lda, fb, ldb, 0.f, c, ldc);
  } else {
    wc.resize(static_cast<size_t>(m * n));
    if (bias)  // C starts as the bias rows: sgemm adds the product to it (beta 1)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) wc[static_cast<size_t>(i * n + j)] = static_cast<float>(bias[j]);
    gemm(ta, tb, m, n, k, alpha, fa, lda, fb, ldb, bias ? 1.f : 0.f, wc.data(), n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = Float16(wc[static_cast<size_t>(i * n + j)]);
  }
  return Status::Ok();
}

}  // namespace

Status gemm_fp16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Float16* a, int64_t lda,
                 const Float16* b, int64_t ldb, Float16* c, int64_t ldc, const Float16* bias) {
  return run(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, bias);
}

Status gemm_fp16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Float16* a, int64_t lda,
                 const Float16* b, int64_t ldb, float* c, int64_t ldc) {
  return run(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, nullptr);
}

}  // namespace ort_train
