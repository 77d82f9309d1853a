// CPU kernels: MatMul, com.ort_train FusedMatMul (MatMul with its operands'
// last two dims optionally swapped and a scale alpha, read by the GEMM in
// place, and an optional bias added to each output row, the same float
// addition an Add node made) and Gemm through the BLAS (float32:
// OpenBLAS or oneDNN, chosen per shape by measurement, runtime/cpu/gemm_backend.h). MatMul folds A's batch into M when B has
// no batch (the Linear-layer case: one GEMM for the whole batch); otherwise
// one GEMM per broadcast batch entry, threaded across the batch when they are
// small (runtime/cpu/matmul_geometry.h). Integer MatMul uses a plain loop.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "graph/dispatch.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/gemm_backend.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/matmul_geometry.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename T>
void small_gemm(int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = T(0);
      for (int64_t p = 0; p < k; ++p) acc = static_cast<T>(acc + a[i * k + p] * b[p * n + j]);
      c[i * n + j] = acc;
    }
}

// Up to this K both GEMM libraries take the product in one block of K
// (OpenBLAS 0.3.21's Zen/Haswell sgemm 320, oneDNN 2.6's 256), so the sum
// of the product reaches the output once: bias + product there is the same
// single float addition as the epilogue's product + bias, bit for bit
// (tests/graph/passes/matmul_fusions_test.cc checks both sides of it).
constexpr int64_t kBiasFirstMaxK = 256;

// Y = alpha * A' @ B' (+ bias on every row) (A' = A with its last two dims swapped when ta, B' likewise).
Status matmul_impl(KernelContext& ctx, bool ta, bool tb, double alpha, const Tensor* bias) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  Tensor& out = ctx.output(0);
  MatMulGeometry g = matmul_geometry(A.dims(), B.dims(), ta, tb);
  int64_t n = g.n, k = g.k, lda = g.lda, ldb = g.ldb;
  if (out.numel() == 0) return Status::Ok();
  bool plain = !ta && !tb && alpha == 1.0 && !bias;
  if (!plain && !dtype_is_float(A.dtype())) return unsupported_dtype(ctx, A.dtype());
  bool ok = dispatch_numeric(A.dtype(), [&]<typename T>() {
    const T* pa = A.data<T>();
    const T* pb = B.data<T>();
    T* pc = out.data<T>();
    auto one = [&](int64_t rows, const T* a, const T* b, T* c) {
      if constexpr (std::is_floating_point_v<T>) {
        if (bias && k > 0 && k <= kBiasFirstMaxK) {
          // The bias first, the product accumulated onto it (beta 1): a GEMM
          // with beta 0 zeroes its output before it starts (OpenBLAS's
          // sgemm_beta), so the epilogue below costs two passes over an
          // output as large as a vocabulary's logits (125 MB in BERT-style).
          const T* pbias = bias->data<T>();
          for (int64_t r = 0; r < rows; ++r) std::copy(pbias, pbias + n, c + r * n);
          gemm(ta, tb, rows, n, k, static_cast<T>(alpha), a, lda, b, ldb, T(1), c, n);
          return;
        }
        if (k == 0) {
          std::memset(c, 0, sizeof(T) * static_cast<size_t>(rows * n));
        } else {
          gemm(ta, tb, rows, n, k, static_cast<T>(alpha), a, lda, b, ldb, T(0), c, n);
        }
        if (bias) {  // the epilogue, while the rows are still in cache
          const T* pbias = bias->data<T>();
          for (int64_t r = 0; r < rows; ++r) {
            T* row = c + r * n;
            for (int64_t j = 0; j < n; ++j) row[j] = row[j] + pbias[j];
          }
        }
      } else {
        small_gemm(rows, n, k, a, b, c);
      }
    };
    for_each_matmul_gemm(g, [&](int64_t rows, int64_t oa, int64_t ob, int64_t oc) {
      one(rows, pa + oa, pb + ob, pc + oc);
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, A.dtype());
}

Status matmul(KernelContext& ctx) { return matmul_impl(ctx, false, false, 1.0, nullptr); }

Status fused_matmul(KernelContext& ctx) {
  const Node& node = ctx.node();
  ASSIGN_OR_RETURN(const Tensor* bias, fused_matmul_bias(ctx));
  return matmul_impl(ctx, node.attr_int("transA", 0) != 0, node.attr_int("transB", 0) != 0,
                     node.attr_float("alpha", 1.f), bias);
}

Status gemm_kernel(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  Tensor& Y = ctx.output(0);
  bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  double alpha = ctx.node().attr_float("alpha", 1.f), beta = ctx.node().attr_float("beta", 1.f);
  int64_t m = Y.dims()[0], n = Y.dims()[1], k = ta ? A.dims()[0] : A.dims()[1];
  bool has_c = ctx.has_input(2) && beta != 0.0;
  bool ok = dispatch_float(A.dtype(), [&]<typename T>() {
    T* y = Y.data<T>();
    if (has_c) {  // Y = beta * broadcast(C), then accumulate the product into it
      const Tensor& C = ctx.input(2);
      Dims ydims = Y.dims();
      auto plan = make_broadcast_plan<1>(ydims, {&C.dims()});
      const T* c = C.data<T>();
      T b = static_cast<T>(beta);
      for_each_broadcast_run(plan, [&](int64_t o, const std::array<int64_t, 1>& off, int64_t cnt) {
        for (int64_t i = 0; i < cnt; ++i) y[o + i] = b * c[off[0] + i * plan.inner_step[0]];
      });
    }
    if (m * n == 0) return;
    if (k == 0) {
      if (!has_c) std::memset(y, 0, sizeof(T) * static_cast<size_t>(m * n));
      return;
    }
    gemm(ta, tb, m, n, k, static_cast<T>(alpha), A.data<T>(), A.dims()[1], B.data<T>(), B.dims()[1],
         has_c ? T(1) : T(0), y, n);
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, A.dtype());
}

}  // namespace

// float32: OpenBLAS or oneDNN, measured per shape (runtime/cpu/gemm_backend.h).
ORT_REGISTER_CPU_KERNEL("MatMul", 1, 1000, gemm_backend_choice(matmul));
ORT_REGISTER_CPU_KERNEL("Gemm", 7, 1000, gemm_backend_choice(gemm_kernel));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "FusedMatMul", 1, 1000, DeviceKind::kCpu, gemm_backend_choice(fused_matmul));

}  // namespace ort_train
