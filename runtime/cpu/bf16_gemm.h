// bfloat16 GEMM with float32 accumulation on the CPU, on oneDNN's matmul
// (AVX512-BF16 dot products where the CPU has them; oneDNN converts and uses
// float FMA on other AVX-512 CPUs). Where oneDNN makes no bfloat16 matmul at
// all (AVX2-only CPUs), the operands are widened to float32 for OpenBLAS's
// sgemm (widened_gemm.h): the same float32 accumulation and one rounding, at
// float32 speed. Debian's OpenBLAS 0.3.21 has no sbgemm.
#pragma once
#include <cstdint>

#include "graph/dtype.h"
#include "graph/status.h"

namespace ort_train {

// C[m,n] = alpha * op(A)[m,k] @ op(B)[k,n], row-major with leading dims, each
// product accumulated in float32 and rounded to C's type once (to nearest,
// ties to even, for bfloat16). Threads: the kernels' OpenMP pool, or the
// calling thread alone inside a parallel region.
Status gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a, int64_t lda,
                 const BFloat16* b, int64_t ldb, float* c, int64_t ldc);
// The same rounded to bfloat16; `bias` (n values, or null) is added to every
// row before that one rounding (oneDNN's matmul bias).
Status gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a, int64_t lda,
                 const BFloat16* b, int64_t ldb, BFloat16* c, int64_t ldc, const BFloat16* bias = nullptr);

}  // namespace ort_train
