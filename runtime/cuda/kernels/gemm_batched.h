// Row-major GEMMs through cuBLAS, for every registration that multiplies
// (MatMul, FusedMatMul, Gemm, Attention): C[m,n] = alpha op(A) op(B) + beta C
// over `batch` matrices at the given element strides. float32 may use TF32
// tensor cores unless the device was configured with allow_tf32 = false;
// float16/bfloat16 accumulate and scale in float32 and round once.
#pragma once
#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train::cuda {

Status gemm_batched(DType t, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                    int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, double beta, void* c,
                    int64_t ldc, int64_t stride_c, int64_t batch);
// The same with C of another type than A and B: 16-bit A and B into a
// float32 C (16-bit attention's scores), float32 accumulation.
Status gemm_batched(DType ab, DType c_type, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                    const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                    double beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch);

}  // namespace ort_train::cuda
