// Typed wrappers over the row-major GEMM, so kernels templated on
// float/double call one name. float32 goes to the backend chosen for the
// running kernel (runtime/cpu/gemm_backend.h: OpenBLAS unless a measured
// choice picked oneDNN); float64 is OpenBLAS's.
#pragma once
#include <cblas.h>

#include <cstdint>

#include "runtime/cpu/gemm_backend.h"

namespace ort_train {

// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, row-major, with leading dims.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (current_cpu_gemm() == CpuGemm::kOneDnn && onednn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

}  // namespace ort_train
