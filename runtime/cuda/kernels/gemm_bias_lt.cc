#include "runtime/cuda/kernels/gemm_bias_lt.h"

#include <array>
#include <map>
#include <memory>
#include <mutex>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"

namespace ort_train::cuda {
namespace {

// PyTorch's cuBLASLt workspace on Hopper: some of the fastest algorithms for
// large GEMMs need it. Taken from the caching allocator per call.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// The descriptors and chosen algorithm of one shape, made once: the heuristic
// query costs more than a small GEMM.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// The largest power of two up to 256 that divides the address: the
// heuristic's algorithms differ by the alignment they need.
uint32_t alignment(const void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && v % al != 0) al /= 2;
  return al;
}

template <typename T>
cublasStatus_t set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& value) {
  return cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value));
}
template <typename T>
cublasStatus_t set(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
  return cublasLtMatmulPreferenceSetAttribute(p, attr, &value, sizeof(value));
}

// Column-major, as cuBLAS sees a row-major product: D^T (n x m) =
// op(B)^T (n x k) op(A)^T (k x m), so cuBLASLt's first operand is B and the
// bias runs along D^T's rows, the output features.
Status make_plan(LtPlan& p, cudaDataType_t dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda,
                 int64_t ldb, int64_t ldd, const std::array<uint32_t, 4>& align) {
  CudaContext& cx = context();
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_RETURN_IF_ERROR(set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, opa));
  CUBLAS_RETURN_IF_ERROR(set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, opb));
  CUBLAS_RETURN_IF_ERROR(set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS));
  CUBLAS_RETURN_IF_ERROR(set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, dt));
  CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.a, dt, static_cast<uint64_t>(tb ? k : n),
                                                    static_cast<uint64_t>(tb ? n : k), ldb));
  CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.b, dt, static_cast<uint64_t>(ta ? m : k),
                                                    static_cast<uint64_t>(ta ? k : m), lda));
  CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&p.d, dt, static_cast<uint64_t>(n), static_cast<uint64_t>(m), ldd));
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, decltype(&cublasLtMatmulPreferenceDestroy)> guard(
      pref, cublasLtMatmulPreferenceDestroy);
  CUBLAS_RETURN_IF_ERROR(set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kWorkspaceBytes));
  // Split-K partial sums are added in float32 only (docs/cuda.md's promise):
  // the in-place and output-type schemes would add them in 16 bits.
  uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  CUBLAS_RETURN_IF_ERROR(set(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, schemes));
  CUBLAS_RETURN_IF_ERROR(set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align[1]));
  CUBLAS_RETURN_IF_ERROR(set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align[0]));
  CUBLAS_RETURN_IF_ERROR(set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align[3]));
  CUBLAS_RETURN_IF_ERROR(set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align[3]));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(cx.cublas_lt, p.desc, p.a, p.b, p.d, p.d, pref, 1, &result,
                                                    &returned);
  p.found = s == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  if (p.found) p.algo = result.algo;
  return Status::Ok();
}

}  // namespace

Status gemm_bias_lt(DType t, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const void* a,
                    int64_t lda, const void* b, int64_t ldb, const void* bias, void* d, int64_t ldd) {
  if (t != DType::kFloat16 && t != DType::kBFloat16)
    return unsupported("the cuBLASLt bias GEMM takes float16 or bfloat16, not {}", dtype_name(t));
  cudaDataType_t dt = t == DType::kFloat16 ? CUDA_R_16F : CUDA_R_16BF;
  std::array<uint32_t, 4> align{alignment(a), alignment(b), alignment(bias), alignment(d)};
  // The bias pointer's alignment is not a preference cuBLASLt takes: 16-byte
  // vectors are what its epilogues read, so a less aligned bias goes the
  // other way.
  if (align[2] < 16) return unsupported("bias not 16-byte aligned");
  using Key = std::array<int64_t, 12>;
  Key key{static_cast<int64_t>(t), ta, tb, m, n, k, lda, ldb, ldd, align[0], align[1], align[3]};
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<LtPlan>> plans;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<LtPlan>& p = plans[key];
  if (!p) {
    auto made = std::make_unique<LtPlan>();
    RETURN_IF_ERROR(make_plan(*made, dt, ta, tb, m, n, k, lda, ldb, ldd, align));
    p = std::move(made);
  }
  if (!p->found) return unsupported("cuBLASLt has no bias-epilogue algorithm for [{}x{}] x [{}x{}]", m, k, k, n);
  CudaContext& cx = context();
  CUBLAS_RETURN_IF_ERROR(set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias));
  std::shared_ptr<Storage> workspace = scratch(kWorkspaceBytes);
  float beta = 0.f;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(cx.cublas_lt, p->desc, &alpha, b, p->a, a, p->b, &beta, d, p->d, d, p->d,
                                        &p->algo, workspace->data(), kWorkspaceBytes, cx.compute));
  return Status::Ok();
}

}  // namespace ort_train::cuda
