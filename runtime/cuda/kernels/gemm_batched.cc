#include "runtime/cuda/kernels/gemm_batched.h"

#include "runtime/cuda/cuda_kernel.h"

namespace ort_train::cuda {

Status gemm_batched(DType t, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
                    int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, double beta, void* c,
                    int64_t ldc, int64_t stride_c, int64_t batch) {
  return gemm_batched(t, t, ta, tb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
}

Status gemm_batched(DType t, DType c_type, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                    const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                    double beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (c_type != t && !(dtype_is_half(t) && c_type == DType::kFloat))
    return unsupported("GEMM on CUDA: {} operands into a {} product are not supported", dtype_name(t),
                       dtype_name(c_type));
  CudaContext& cx = context();
  cudaDataType_t dt;
  cublasComputeType_t compute;
  float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
  const void* pa = &fa;
  const void* pb = &fb;
  if (t == DType::kFloat) {
    dt = CUDA_R_32F;
    compute = cx.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (cx.deterministic && !cx.allow_tf32) compute = CUBLAS_COMPUTE_32F_PEDANTIC;
  } else if (t == DType::kFloat16 || t == DType::kBFloat16) {
    dt = t == DType::kFloat16 ? CUDA_R_16F : CUDA_R_16BF;
    compute = CUBLAS_COMPUTE_32F;  // float32 accumulation; alpha and beta are float
  } else if (t == DType::kDouble) {
    dt = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
    pa = &alpha;
    pb = &beta;
  } else {
    return unsupported("MatMul/Gemm on CUDA: dtype {} is not supported", dtype_name(t));
  }
  cudaDataType_t dc = c_type == t ? dt : CUDA_R_32F;
  // Column-major view: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
  cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (batch == 1) {
    CUBLAS_RETURN_IF_ERROR(cublasGemmEx(cx.cublas, opb, opa, static_cast<int>(n), static_cast<int>(m),
                                        static_cast<int>(k), pa, b, dt, static_cast<int>(ldb), a, dt,
                                        static_cast<int>(lda), pb, c, dc, static_cast<int>(ldc), compute,
                                        CUBLAS_GEMM_DEFAULT));
  } else {
    CUBLAS_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
        cx.cublas, opb, opa, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), pa, b, dt,
        static_cast<int>(ldb), stride_b, a, dt, static_cast<int>(lda), stride_a, pb, c, dc, static_cast<int>(ldc),
        stride_c, static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT));
  }
  return Status::Ok();
}

}  // namespace ort_train::cuda
