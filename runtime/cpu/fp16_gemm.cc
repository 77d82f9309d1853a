#include "runtime/cpu/fp16_gemm.h"

#include "runtime/cpu/widened_gemm.h"

namespace ort_train {

Status gemm_fp16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Float16* a, int64_t lda,
                 const Float16* b, int64_t ldb, Float16* c, int64_t ldc, const Float16* bias) {
  return widened_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, bias);
}

Status gemm_fp16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Float16* a, int64_t lda,
                 const Float16* b, int64_t ldb, float* c, int64_t ldc) {
  return widened_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, static_cast<const Float16*>(nullptr));
}

}  // namespace ort_train
