// A 16-bit GEMM whose bias row is added in cuBLASLt's epilogue: D[m,n] =
// round(alpha op(A) op(B) + bias[n]) with one rounding from float32, which is
// what PyTorch's CUDA addmm (nn.Linear under autocast) computes. cublasGemmEx
// with beta = 1 over a copy of the bias does not: on an H100 a quarter of a
// bf16 Linear's outputs came out one unit in the last place away from the CPU
// and from PyTorch (tests/runtime/cuda/cuda_device_test.cc, node by node).
// The epilogue also saves the pass that copied the bias into the output.
#pragma once
#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train::cuda {

// Row-major, no batch; `t` is kFloat16 or kBFloat16 for all of A, B, bias and
// D. kUnsupported when cuBLASLt offers no algorithm for the shape: callers
// then take the cublasGemmEx path.
Status gemm_bias_lt(DType t, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const void* a,
                    int64_t lda, const void* b, int64_t ldb, const void* bias, void* d, int64_t ldd);

}  // namespace ort_train::cuda
