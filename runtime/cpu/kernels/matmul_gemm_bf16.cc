// CPU kernels: MatMul, Gemm and com.ort_train FusedMatMul on bfloat16
// operands (what --precision bf16's autocast pass gives them), through
// runtime/cpu/bf16_gemm.h: float32 accumulation, the result rounded to
// bfloat16 once. A bias or Gemm's C is added in float32 before that rounding.
// Batches are the float kernels' (runtime/cpu/matmul_geometry.h).
#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/cpu/bf16_gemm.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/matmul_geometry.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// The first error of GEMMs run on several threads.
class FirstError {
 public:
  void record(Status s) {
    if (s.ok() || failed_.exchange(true)) return;
    std::lock_guard<std::mutex> lock(mu_);
    first_ = std::move(s);
  }
  Status status() { return failed_ ? first_ : Status::Ok(); }

 private:
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  Status first_ = Status::Ok();
};

Status matmul_bf16_impl(KernelContext& ctx, bool ta, bool tb, float alpha, const Tensor* bias) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  Tensor& out = ctx.output(0);
  if (A.dtype() != DType::kBFloat16 || B.dtype() != DType::kBFloat16) return unsupported_dtype(ctx, B.dtype());
  MatMulGeometry g = matmul_geometry(A.dims(), B.dims(), ta, tb);
  int64_t n = g.n, k = g.k, lda = g.lda, ldb = g.ldb;
  if (out.numel() == 0) return Status::Ok();
  const BFloat16* pa = A.data<BFloat16>();
  const BFloat16* pb = B.data<BFloat16>();
  BFloat16* pc = out.data<BFloat16>();
  auto one = [&](int64_t rows, const BFloat16* a, const BFloat16* b, BFloat16* c) -> Status {
    if (!bias) return gemm_bf16(ta, tb, rows, n, k, alpha, a, lda, b, ldb, c, n);
    std::vector<float> acc(static_cast<size_t>(rows * n));
    RETURN_IF_ERROR(gemm_bf16(ta, tb, rows, n, k, alpha, a, lda, b, ldb, acc.data(), n));
    const BFloat16* pbias = bias->data<BFloat16>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) c[r * n + j] = BFloat16(acc[r * n + j] + static_cast<float>(pbias[j]));
    return Status::Ok();
  };
  FirstError error;
  for_each_matmul_gemm(g, [&](int64_t rows, int64_t oa, int64_t ob, int64_t oc) {
    error.record(one(rows, pa + oa, pb + ob, pc + oc));
  });
  return error.status();
}

Status matmul_bf16(KernelContext& ctx) { return matmul_bf16_impl(ctx, false, false, 1.f, nullptr); }

Status fused_matmul_bf16(KernelContext& ctx) {
  const Node& node = ctx.node();
  ASSIGN_OR_RETURN(const Tensor* bias, fused_matmul_bias(ctx));
  return matmul_bf16_impl(ctx, node.attr_int("transA", 0) != 0, node.attr_int("transB", 0) != 0,
                          node.attr_float("alpha", 1.f), bias);
}

Status gemm_bf16_kernel(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  Tensor& Y = ctx.output(0);
  if (A.dtype() != DType::kBFloat16 || B.dtype() != DType::kBFloat16) return unsupported_dtype(ctx, B.dtype());
  bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  float alpha = ctx.node().attr_float("alpha", 1.f), beta = ctx.node().attr_float("beta", 1.f);
  int64_t m = Y.dims()[0], n = Y.dims()[1], k = ta ? A.dims()[0] : A.dims()[1];
  const BFloat16 *a = A.data<BFloat16>(), *b = B.data<BFloat16>();
  BFloat16* y = Y.data<BFloat16>();
  if (!ctx.has_input(2) || beta == 0.f) return gemm_bf16(ta, tb, m, n, k, alpha, a, A.dims()[1], b, B.dims()[1], y, n);
  // Y = alpha * A' @ B' + beta * broadcast(C), summed in float32, rounded once.
  std::vector<float> acc(static_cast<size_t>(m * n));
  RETURN_IF_ERROR(gemm_bf16(ta, tb, m, n, k, alpha, a, A.dims()[1], b, B.dims()[1], acc.data(), n));
  const Tensor& C = ctx.input(2);
  Dims ydims = Y.dims();
  auto plan = make_broadcast_plan<1>(ydims, {&C.dims()});
  const BFloat16* c = C.data<BFloat16>();
  for_each_broadcast_run(plan, [&](int64_t o, const std::array<int64_t, 1>& off, int64_t cnt) {
    for (int64_t i = 0; i < cnt; ++i)
      y[o + i] = BFloat16(acc[o + i] + beta * static_cast<float>(c[off[0] + i * plan.inner_step[0]]));
  });
  return Status::Ok();
}

const std::vector<DType> kBf16{DType::kBFloat16};

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES("", "MatMul", 1, 1000, DeviceKind::kCpu, matmul_bf16, kBf16);
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Gemm", 7, 1000, DeviceKind::kCpu, gemm_bf16_kernel, kBf16);
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "FusedMatMul", 1, 1000, DeviceKind::kCpu, fused_matmul_bf16, kBf16);

}  // namespace ort_train
