// CPU kernel of ConvGrad(dY, X, W) -> dX, dW, dB with the forward Conv's
// attributes. Per (image, group), with col = im2col(X):
//   dW_g += dY_g @ col^T          dcol = W_g^T @ dY_g          dX_g = col2im(dcol)
//   dB[m] = sum of dY over images and positions.
// Outputs left out of the node are not computed.
#include <cstring>

#include "graph/dispatch.h"
#include "graph/ops/window_geometry.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/im2col.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status conv_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& W = ctx.input(2);
  int64_t N = X.dims()[0], C = X.dims()[1], M = W.dims()[0];
  int64_t group = ctx.node().attr_int("group", 1);
  std::vector<int64_t> spatial(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> kernel(W.dims().begin() + 2, W.dims().end());
  ASSIGN_OR_RETURN(auto geo, window_geometry(ctx.node(), spatial, kernel, false));
  int64_t Cg = C / group, Mg = M / group, K = 1, P = 1, S = 1;
  for (const WindowDim& w : geo) {
    K *= w.kernel;
    P *= w.out;
    S *= w.in;
  }
  bool want_dx = ctx.has_output(0), want_dw = ctx.num_outputs() > 1 && ctx.has_output(1);
  bool want_db = ctx.num_outputs() > 2 && ctx.has_output(2);
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* w = W.data<T>();
    const T* dy = dY.data<T>();
    T* dx = want_dx ? ctx.output(0).data<T>() : nullptr;
    T* dw = want_dw ? ctx.output(1).data<T>() : nullptr;
    if (dw) std::memset(dw, 0, sizeof(T) * static_cast<size_t>(W.numel()));
    std::vector<T> col(want_dw ? static_cast<size_t>(Cg * K * P) : 0);
    std::vector<T> dcol(want_dx ? static_cast<size_t>(Cg * K * P) : 0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < group; ++g) {
        const T* dyg = dy + (n * M + g * Mg) * P;
        const T* wg = w + g * Mg * Cg * K;
        if (dw && Cg * K > 0 && P > 0) {
          im2col(x + (n * C + g * Cg) * S, Cg, geo, col.data());
          gemm(false, true, Mg, Cg * K, P, T(1), dyg, P, col.data(), P, T(1), dw + g * Mg * Cg * K, Cg * K);
        }
        if (dx) {
          T* dxg = dx + (n * C + g * Cg) * S;
          if (Mg == 0 || P == 0) {
            std::memset(dxg, 0, sizeof(T) * static_cast<size_t>(Cg * S));
            continue;
          }
          gemm(true, false, Cg * K, P, Mg, T(1), wg, Cg * K, dyg, P, T(0), dcol.data(), P);
          col2im(dcol.data(), Cg, geo, dxg);
        }
      }
    if (want_db) {
      T* db = ctx.output(2).data<T>();
      parallel_for(M, 1, [&](int64_t b, int64_t e) {
        for (int64_t m = b; m < e; ++m) {
          double s = 0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t p = 0; p < P; ++p) s += dy[(n * M + m) * P + p];
          db[m] = static_cast<T>(s);
        }
      });
    }
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "ConvGrad", 1, 1000, DeviceKind::kCpu, conv_grad);

}  // namespace ort_train
