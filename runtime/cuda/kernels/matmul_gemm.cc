// CUDA registrations: MatMul (numpy semantics: 1-D operands, broadcast batch
// dims), com.ort_train FusedMatMul (transposed operands read in place, a scale
// alpha, an optional bias added to the rows after the GEMM) and Gemm through
// cuBLAS. Row-major C = A B is computed as the
// column-major C^T = B^T A^T. float32 may use TF32 tensor cores unless the
// device was configured with allow_tf32 = false. float16 and bfloat16
// (--precision fp16/bf16's autocast) compute in float32 and round once; a
// bias row (FusedMatMul's, or Gemm's 1-D C with beta 1) is added in
// cuBLASLt's epilogue before that rounding, as the CPU kernels and PyTorch's
// addmm add it (gemm_bias_lt.h); other shapes take cuBLAS's beta * C.
#include "cuda_kernels/copy.h"
#include "cuda_kernels/vector_math.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/gemm_batched.h"
#include "runtime/cuda/kernels/gemm_bias_lt.h"

namespace ort_train::cuda {
namespace {

// Y = alpha * A' @ B' + beta * Y (A' = A with its last two dims swapped when
// ta, B' likewise; beta 0: Y is only written).
Status matmul_impl(KernelContext& ctx, bool ta, bool tb, double alpha, double beta = 0.0) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  CUDA_OUTPUT(Y, ctx, 0);
  if (A.dtype() != B.dtype()) return unsupported_cuda_dtype(ctx, B.dtype());
  if (Y.numel() == 0) return Status::Ok();
  // Matrix views: a 1-D A is a row, a 1-D B a column.
  Dims ad = A.dims(), bd = B.dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  size_t ra = ad.size(), rb = bd.size();
  int64_t m = ad[ra - (ta ? 1 : 2)], k = ad[ra - (ta ? 2 : 1)], n = bd[rb - (tb ? 2 : 1)];
  int64_t lda = ad[ra - 1], ldb = bd[rb - 1];
  if (k == 0) {
    if (beta == 0.0) CUDA_RETURN_IF_ERROR(cudaMemsetAsync(Y.raw(), 0, Y.nbytes(), stream()));
    return Status::Ok();
  }
  Dims a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  size_t rank = std::max(a_batch.size(), b_batch.size());
  a_batch.insert(a_batch.begin(), rank - a_batch.size(), 1);
  b_batch.insert(b_batch.begin(), rank - b_batch.size(), 1);
  int64_t a_count = num_elements(a_batch), b_count = num_elements(b_batch);
  Dims out_batch(rank);
  for (size_t d = 0; d < rank; ++d) out_batch[d] = std::max(a_batch[d], b_batch[d]);
  int64_t batch = num_elements(out_batch);
  // Shared weight (B without batch): fold A's batch into its rows, one large GEMM.
  if (b_count == 1 && !ta)
    return gemm_batched(A.dtype(), false, tb, a_count * m, n, k, alpha, A.raw(), lda, 0, B.raw(), ldb, 0, beta, Y.raw(),
                        n, 0, 1);
  if ((a_count == batch || a_count == 1) && (b_count == batch || b_count == 1))
    return gemm_batched(A.dtype(), ta, tb, m, n, k, alpha, A.raw(), lda, a_count == 1 ? 0 : m * k, B.raw(), ldb,
                        b_count == 1 ? 0 : k * n, beta, Y.raw(), n, m * n, batch);
  // Partial broadcasting of batch dims: one GEMM per output batch.
  size_t es = dtype_size(A.dtype());
  Dims as = row_major_strides(a_batch), bs = row_major_strides(b_batch), os = row_major_strides(out_batch);
  for (int64_t i = 0; i < batch; ++i) {
    int64_t ai = 0, bi = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t idx = (i / os[d]) % out_batch[d];
      if (a_batch[d] != 1) ai += idx * as[d];
      if (b_batch[d] != 1) bi += idx * bs[d];
    }
    RETURN_IF_ERROR(gemm_batched(A.dtype(), ta, tb, m, n, k, alpha,
                                 static_cast<const char*>(A.raw()) + ai * m * k * es, lda, 0,
                                 static_cast<const char*>(B.raw()) + bi * k * n * es, ldb, 0, beta,
                                 static_cast<char*>(Y.raw()) + i * m * n * es, n, 0, 1));
  }
  return Status::Ok();
}

Status matmul(KernelContext& ctx) { return matmul_impl(ctx, false, false, 1.0); }

// The bias is added by its own pass over Y rather than as cuBLAS's beta = 1
// over a broadcast copy: that would add it before the product's last
// rounding, and the fusion promises the Add's values exactly.
Status fused_matmul(KernelContext& ctx) {
  const Node& node = ctx.node();
  if (dtype_is_half(ctx.input(0).dtype()) && ctx.has_input(2)) {
    // 16-bit: the bias enters before the product's one rounding.
    CUDA_OUTPUT(Y, ctx, 0);
    const Tensor& bias = ctx.input(2);
    if (bias.dtype() != Y.dtype() || bias.rank() != 1 || Y.rank() == 0 || bias.dims()[0] != Y.dims().back())
      return invalid_argument("{}: needs a 1-D bias of the operands' dtype and Y's last dim", node.describe());
    if (Y.numel() == 0) return Status::Ok();
    bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(1);
    // A shared 2-D weight: A's batch folds into its rows, one GEMM.
    if (!ta && A.rank() >= 2 && B.rank() == 2 && A.dims().back() > 0) {
      int64_t k = A.dims().back(), n = Y.dims().back();
      Status s = gemm_bias_lt(Y.dtype(), false, tb, A.numel() / k, n, k, node.attr_float("alpha", 1.f), A.raw(), k,
                              B.raw(), B.dims()[1], bias.raw(), Y.raw(), n);
      if (s.code() != ErrorCode::kUnsupported) return s;
    }
    // Otherwise Y = broadcast(bias), then Y = alpha A' B' + Y.
    ASSIGN_OR_RETURN(CopyMap cm, expand_map(bias.dims(), Y.dims()));
    CUDA_RETURN_IF_ERROR(launch_gather_copy(bias.raw(), Y.raw(), Y.numel(), 2, cm, stream()));
    return matmul_impl(ctx, ta, tb, node.attr_float("alpha", 1.f), 1.0);
  }
  RETURN_IF_ERROR(matmul_impl(ctx, node.attr_int("transA", 0) != 0, node.attr_int("transB", 0) != 0,
                              node.attr_float("alpha", 1.f)));
  if (!ctx.has_input(2)) return Status::Ok();
  CUDA_OUTPUT(Y, ctx, 0);
  if (Y.numel() == 0) return Status::Ok();
  return add_bias_into(ctx, Y, ctx.input(2), Y.raw());
}

Status gemm(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  CUDA_OUTPUT(Y, ctx, 0);
  bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  double alpha = ctx.node().attr_float("alpha", 1.f), beta = ctx.node().attr_float("beta", 1.f);
  int64_t m = Y.dims()[0], n = Y.dims()[1], k = ta ? A.dims()[0] : A.dims()[1];
  bool has_c = ctx.has_input(2) && beta != 0.0;
  if (has_c && beta == 1.0 && dtype_is_half(Y.dtype()) && k > 0 && Y.numel() > 0) {
    const Tensor& C = ctx.input(2);  // a bias row: cuBLASLt's epilogue (an nn.Linear export)
    bool row = C.dtype() == Y.dtype() && C.numel() == n && (C.rank() == 1 || (C.rank() == 2 && C.dims()[0] == 1));
    if (row) {
      Status s = gemm_bias_lt(Y.dtype(), ta, tb, m, n, k, static_cast<float>(alpha), A.raw(), A.dims()[1], B.raw(),
                              B.dims()[1], C.raw(), Y.raw(), n);
      if (s.code() != ErrorCode::kUnsupported) return s;
    }
  }
  if (has_c) {  // Y = broadcast(C), then Y = alpha A B + beta Y
    const Tensor& C = ctx.input(2);
    ASSIGN_OR_RETURN(CopyMap cm, expand_map(C.dims(), Y.dims()));
    CUDA_RETURN_IF_ERROR(launch_gather_copy(C.raw(), Y.raw(), Y.numel(), static_cast<int>(dtype_size(C.dtype())), cm, stream()));
  }
  if (Y.numel() == 0) return Status::Ok();
  if (k == 0) {
    if (!has_c) CUDA_RETURN_IF_ERROR(cudaMemsetAsync(Y.raw(), 0, Y.nbytes(), stream()));
    else if (Y.dtype() == DType::kFloat) CUDA_RETURN_IF_ERROR(launch_scale(Y.data<float>(), static_cast<float>(beta), Y.numel(), stream()));
    return Status::Ok();
  }
  return gemm_batched(A.dtype(), ta, tb, m, n, k, alpha, A.raw(), A.dims()[1], 0, B.raw(), B.dims()[1], 0,
                      has_c ? beta : 0.0, Y.raw(), n, 0, 1);
}

const std::vector<DType> kGemmDtypes{DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16};

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES("", "MatMul", 1, 1000, DeviceKind::kCuda, matmul, kGemmDtypes);
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "FusedMatMul", 1, 1000, DeviceKind::kCuda, fused_matmul, kGemmDtypes);
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Gemm", 7, 1000, DeviceKind::kCuda, gemm, kGemmDtypes);

}  // namespace ort_train::cuda
