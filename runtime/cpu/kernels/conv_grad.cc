// CPU kernel of ConvGrad(dY, X, W) -> dX, dW, dB with the forward Conv's
// attributes. Per (image, group), with col = im2col(X):
//   dW_g += dY_g @ col^T          dcol = W_g^T @ dY_g          dX_g = col2im(dcol)
//   dB[m] = sum of dY over images and positions.
// The per-image GEMMs run one per thread when they are small
// (runtime/cpu/batched_gemm.h); dW's sum over images goes through fixed chunks.
// Outputs left out of the node are not computed.
#include <algorithm>
#include <cstring>

#include "graph/dispatch.h"
#include "graph/ops/window_geometry.h"
#include "runtime/cpu/batched_gemm.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/gemm_backend.h"
#include "runtime/cpu/im2col.h"
#include "runtime/cpu/onednn_conv.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// How many partial sums dW is split into over the images (at most one per
// image); fixed, so the sum's order never depends on the thread count.
constexpr int64_t kWeightGradChunks = 8;

Status conv_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& W = ctx.input(2);
  int64_t N = X.dims()[0], C = X.dims()[1], M = W.dims()[0];
  ASSIGN_OR_RETURN(int64_t group, conv_group(ctx.node()));
  std::vector<int64_t> spatial(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> kernel(W.dims().begin() + 2, W.dims().end());
  ASSIGN_OR_RETURN(auto geo, window_geometry(ctx.node(), spatial, kernel, false));
  int64_t Cg = C / group, Mg = M / group, K = 1, P = 1, S = 1;
  for (const WindowDim& w : geo) {
    K *= w.kernel;
    P *= w.out;
    S *= w.in;
  }
  // The operands a file pairs must be one convolution's: the loops below
  // index dY by N x M x P and W by its groups.
  if (C % group != 0 || M % group != 0 || W.dims()[1] != Cg || dY.numel() != N * M * P)
    return shape_error("{}: dY {}, X {} and W {} (group {}) are not one convolution's", ctx.node().describe(),
                       dims_to_string(dY.dims()), dims_to_string(X.dims()), dims_to_string(W.dims()), group);
  bool want_dx = ctx.has_output(0), want_dw = ctx.num_outputs() > 1 && ctx.has_output(1);
  bool want_db = ctx.num_outputs() > 2 && ctx.has_output(2);
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* w = W.data<T>();
    const T* dy = dY.data<T>();
    T* dx = want_dx ? ctx.output(0).data<T>() : nullptr;
    T* dw = want_dw ? ctx.output(1).data<T>() : nullptr;
    int64_t rows = Cg * K;  // of col and dcol
    if (dw && rows > 0 && P > 0 && N > 0) {
      // dW sums over the images. Fixed chunks of images, never the thread
      // count, each sum into a buffer of their own, and the buffers add up in
      // chunk order: every thread count gives the same bits.
      int64_t chunks = std::min<int64_t>(N, kWeightGradChunks);
      size_t wsize = static_cast<size_t>(W.numel());
      std::vector<T> partial(static_cast<size_t>(chunks - 1) * wsize);
      for_each_gemm(chunks, Mg * rows * P, [&](int64_t first, int64_t last) {
        std::vector<T> col(static_cast<size_t>(rows * P));
        for (int64_t c = first; c < last; ++c) {
          T* sum = c == 0 ? dw : partial.data() + static_cast<size_t>(c - 1) * wsize;
          std::memset(sum, 0, sizeof(T) * wsize);
          for (int64_t n = c * N / chunks; n < (c + 1) * N / chunks; ++n)
            for (int64_t g = 0; g < group; ++g) {
              im2col(x + (n * C + g * Cg) * S, Cg, geo, col.data());
              gemm(false, true, Mg, rows, P, T(1), dy + (n * M + g * Mg) * P, P, col.data(), P, T(1),
                   sum + g * Mg * rows, rows);
            }
        }
      });
      parallel_for(static_cast<int64_t>(wsize), kElementwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t c = 1; c < chunks; ++c) {
          const T* part = partial.data() + static_cast<size_t>(c - 1) * wsize;
          for (int64_t i = b; i < e; ++i) dw[i] += part[i];
        }
      });
    } else if (dw) {
      std::memset(dw, 0, sizeof(T) * static_cast<size_t>(W.numel()));
    }
    if (dx) {
      for_each_gemm(N * group, rows * P * Mg, [&](int64_t first, int64_t last) {
        std::vector<T> dcol(static_cast<size_t>(rows * P));
        for (int64_t t = first; t < last; ++t) {
          int64_t n = t / group, g = t % group;
          T* dxg = dx + (n * C + g * Cg) * S;
          if (Mg == 0 || P == 0) {
            std::memset(dxg, 0, sizeof(T) * static_cast<size_t>(Cg * S));
            continue;
          }
          gemm(true, false, rows, P, Mg, T(1), w + g * Mg * rows, rows, dy + (n * M + g * Mg) * P, P, T(0),
               dcol.data(), P);
          col2im(dcol.data(), Cg, geo, dxg);
        }
      });
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

// float32: the GEMMs' library measured per shape (runtime/cpu/gemm_backend.h),
// or oneDNN's own convolution backward (runtime/cpu/onednn_conv.h).
ORT_REGISTER_KERNEL(kOrtTrainDomain, "ConvGrad", 1, 1000, DeviceKind::kCpu,
                    gemm_backend_choice(conv_grad, "onednn_conv", onednn_conv_backward));

}  // namespace ort_train
