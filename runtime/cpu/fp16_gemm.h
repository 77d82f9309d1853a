// float16 GEMM with float32 accumulation on the CPU. This CPU (and Debian's
// oneDNN 2.6.3, which makes no f16 matmul without AVX512-FP16) has no
// half-precision dot product, so the operands are widened to float32 — exact:
// every float16 is a float32 — and multiplied by OpenBLAS's sgemm; the result
// is rounded to float16 once. That is what a float16 GEMM with float32
// accumulation computes, at float32 speed: on this machine --precision fp16
// is for checking the GPU's recipe (loss scaling) against PyTorch, and bf16 is
// the fast one.
#pragma once
#include <cstdint>

#include "graph/dtype.h"
#include "graph/status.h"

namespace ort_train {

// C[m,n] = alpha * op(A)[m,k] @ op(B)[k,n], row-major with leading dims, as gemm_bf16.
// `bias` (n values, or null) is added to every row before the one rounding.
Status gemm_fp16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Float16* a, int64_t lda,
                 const Float16* b, int64_t ldb, Float16* c, int64_t ldc, const Float16* bias = nullptr);
Status gemm_fp16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const Float16* a, int64_t lda,
                 const Float16* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace ort_train
