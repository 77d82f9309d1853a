// CPU kernels: MatMul, Gemm and com.ort_train FusedMatMul on bfloat16 and
// float16 operands (what --precision bf16/fp16's autocast pass gives them),
// through runtime/cpu/bf16_gemm.h (oneDNN) and runtime/cpu/fp16_gemm.h
// (widened to float32, OpenBLAS): float32 accumulation, the result rounded to
// the 16-bit type once. A bias or Gemm's C is added in float32 before that
// rounding. Batches are the float kernels' (runtime/cpu/matmul_geometry.h).
#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/cpu/bf16_gemm.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/fp16_gemm.h"
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

// The 16-bit GEMM of T (bfloat16: oneDNN; float16: widened to float32),
// into float32 or rounded to T with an optional bias row added before the
// rounding.
template <typename T>
Status half_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const T* a, int64_t lda, const T* b,
                 int64_t ldb, float* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, BFloat16>) return gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc);
  else return gemm_fp16(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc);
}

template <typename T>
Status half_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const T* a, int64_t lda, const T* b,
                 int64_t ldb, T* c, int64_t ldc, const T* bias = nullptr) {
  if constexpr (std::is_same_v<T, BFloat16>) return gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, bias);
  else return gemm_fp16(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, bias);
}

template <typename T>
Status matmul_half_impl(KernelContext& ctx, bool ta, bool tb, float alpha, const Tensor* bias) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  Tensor& out = ctx.output(0);
  if (A.dtype() != dtype_of<T>() || B.dtype() != dtype_of<T>()) return unsupported_dtype(ctx, B.dtype());
  MatMulGeometry g = matmul_geometry(A.dims(), B.dims(), ta, tb);
  int64_t n = g.n, k = g.k, lda = g.lda, ldb = g.ldb;
  if (out.numel() == 0) return Status::Ok();
  const T* pa = A.data<T>();
  const T* pb = B.data<T>();
  T* pc = out.data<T>();
  const T* pbias = bias ? bias->data<T>() : nullptr;
  FirstError error;
  for_each_matmul_gemm(g, [&](int64_t rows, int64_t oa, int64_t ob, int64_t oc) {
    error.record(half_gemm(ta, tb, rows, n, k, alpha, pa + oa, lda, pb + ob, ldb, pc + oc, n, pbias));
  });
  return error.status();
}

// Each kernel serves both 16-bit types, picked by the first operand's.
template <typename F>
Status by_half_type(KernelContext& ctx, F&& f) {
  if (ctx.input(0).dtype() == DType::kFloat16) return f(Float16{});
  return f(BFloat16{});
}

Status matmul_half(KernelContext& ctx) {
  return by_half_type(ctx, [&](auto t) { return matmul_half_impl<decltype(t)>(ctx, false, false, 1.f, nullptr); });
}

Status fused_matmul_half(KernelContext& ctx) {
  const Node& node = ctx.node();
  ASSIGN_OR_RETURN(const Tensor* bias, fused_matmul_bias(ctx));
  return by_half_type(ctx, [&](auto t) {
    return matmul_half_impl<decltype(t)>(ctx, node.attr_int("transA", 0) != 0, node.attr_int("transB", 0) != 0,
                                         node.attr_float("alpha", 1.f), bias);
  });
}

template <typename T>
Status gemm_half_impl(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  Tensor& Y = ctx.output(0);
  if (A.dtype() != dtype_of<T>() || B.dtype() != dtype_of<T>()) return unsupported_dtype(ctx, B.dtype());
  bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  float alpha = ctx.node().attr_float("alpha", 1.f), beta = ctx.node().attr_float("beta", 1.f);
  int64_t m = Y.dims()[0], n = Y.dims()[1], k = ta ? A.dims()[0] : A.dims()[1];
  const T *a = A.data<T>(), *b = B.data<T>();
  T* y = Y.data<T>();
  if (!ctx.has_input(2) || beta == 0.f) return half_gemm(ta, tb, m, n, k, alpha, a, A.dims()[1], b, B.dims()[1], y, n);
  const Tensor& C = ctx.input(2);
  if (beta == 1.f && C.numel() == n && C.rank() <= 2 && (C.rank() < 2 || C.dims()[0] == 1))
    return half_gemm(ta, tb, m, n, k, alpha, a, A.dims()[1], b, B.dims()[1], y, n, C.data<T>());  // a bias row
  // Y = alpha * A' @ B' + beta * broadcast(C), summed in float32, rounded once.
  std::vector<float> acc(static_cast<size_t>(m * n));
  RETURN_IF_ERROR(half_gemm(ta, tb, m, n, k, alpha, a, A.dims()[1], b, B.dims()[1], acc.data(), n));
  Dims ydims = Y.dims();
  auto plan = make_broadcast_plan<1>(ydims, {&C.dims()});
  const T* c = C.data<T>();
  for_each_broadcast_run(plan, [&](int64_t o, const std::array<int64_t, 1>& off, int64_t cnt) {
    for (int64_t i = 0; i < cnt; ++i)
      y[o + i] = T(acc[o + i] + beta * static_cast<float>(c[off[0] + i * plan.inner_step[0]]));
  });
  return Status::Ok();
}

Status gemm_half(KernelContext& ctx) {
  return by_half_type(ctx, [&](auto t) { return gemm_half_impl<decltype(t)>(ctx); });
}

const std::vector<DType> kHalf{DType::kBFloat16, DType::kFloat16};

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES("", "MatMul", 1, 1000, DeviceKind::kCpu, matmul_half, kHalf);
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Gemm", 7, 1000, DeviceKind::kCpu, gemm_half, kHalf);
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "FusedMatMul", 1, 1000, DeviceKind::kCpu, fused_matmul_half, kHalf);

}  // namespace ort_train
