// CPU kernel of ConvGrad(dY, X, W) -> dX, dW, dB with the forward Conv's
// attributes. Per (image, group), with col = im2col(X):
//   dW_g += dY_g @ col^T          dcol = W_g^T @ dY_g          dX_g = col2im(dcol)
//   dB[m] = sum of dY over images and positions.
// Images sit side by side in one GEMM where they have few positions each
// (runtime/cpu/im2col.h: a small image's deep layers); those GEMMs
// run one per thread when they are small (runtime/cpu/batched_gemm.h); dW's
// sum over images goes through fixed chunks.
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
// dW of at least this many elements is one GEMM over every image, which the
// BLAS splits over the threads (a 128x1152 filter's gradient and up).
constexpr int64_t kSplitOutputs = int64_t{1} << 17;

// One ConvGrad's operands and geometry, and its three gradients. dY's and
// W's pointers are those the GEMMs read: W's live-tap columns when some taps
// are dead (runtime/cpu/im2col.h).
template <typename T>
struct ConvGradRun {
  const T* x;
  const T* w;
  const T* dy;
  int64_t N, C, M, group, Cg, Mg;
  const ColumnGeometry& cg;
  int64_t rows;  // of col and dcol: Cg x the live taps
  int64_t fold;  // images side by side in one GEMM

  int64_t P() const { return cg.positions; }
  int64_t S() const { return cg.image; }

  // dY's [Mg x P] rows of group g for images [n0, n0 + f), side by side; one
  // image's are read in place.
  const T* dy_of(int64_t n0, int64_t f, int64_t g, std::vector<T>& buffer) const {
    if (f == 1) return dy + (n0 * M + g * Mg) * P();
    buffer.resize(static_cast<size_t>(Mg * f * P()));
    for (int64_t j = 0; j < f; ++j)
      place_columns(dy + ((n0 + j) * M + g * Mg) * P(), Mg, P(), buffer.data(), f * P(), j * P());
    return buffer.data();
  }

  // dW (of the live taps) = sum over images of dY_g col^T. Fixed chunks of
  // images, never the thread count, each sum into a buffer of their own, and
  // the buffers add up in chunk order: every thread count gives the same
  // bits. One chunk when dW is large enough for the BLAS to split it (M and
  // N, never K).
  void weight_grad(T* dw_live) const {
    const int64_t chunks = Mg * rows >= kSplitOutputs ? 1 : std::min<int64_t>(N, kWeightGradChunks);
    const size_t wsize = static_cast<size_t>(M * rows);
    std::vector<T> partial(static_cast<size_t>(chunks - 1) * wsize);
    for_each_gemm(chunks, Mg * rows * P() * (N / chunks), [&](int64_t first, int64_t last) {
      std::vector<T> col, dyf;
      for (int64_t c = first; c < last; ++c) {
        T* sum = c == 0 ? dw_live : partial.data() + static_cast<size_t>(c - 1) * wsize;
        std::memset(sum, 0, sizeof(T) * wsize);
        const int64_t end = (c + 1) * N / chunks;
        for (int64_t n0 = c * N / chunks; n0 < end; n0 += fold) {
          const int64_t f = std::min(fold, end - n0);
          col.resize(static_cast<size_t>(rows * f * P()));
          for (int64_t g = 0; g < group; ++g) {
            im2col(x + (n0 * C + g * Cg) * S(), f, C * S(), Cg, cg, col.data(), f * P());
            gemm(false, true, Mg, rows, f * P(), T(1), dy_of(n0, f, g, dyf), f * P(), col.data(), f * P(), T(1),
                 sum + g * Mg * rows, rows);
          }
        }
      }
    });
    parallel_for(static_cast<int64_t>(wsize), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t c = 1; c < chunks; ++c) {
        const T* part = partial.data() + static_cast<size_t>(c - 1) * wsize;
        for (int64_t i = b; i < e; ++i) dw_live[i] += part[i];
      }
    });
  }

  // dcol = W_g^T dY for `fold` images at once, then col2im. No sum over
  // images: the bits are the per-image GEMMs' (K is never split).
  void input_grad(T* dx) const {
    const int64_t blocks = (N + fold - 1) / fold;
    for_each_gemm(blocks * group, rows * P() * Mg * fold, [&](int64_t first, int64_t last) {
      std::vector<T> dcol, dyf;
      for (int64_t t = first; t < last; ++t) {
        const int64_t n0 = (t / group) * fold, g = t % group, f = std::min(fold, N - n0);
        T* dxg = dx + (n0 * C + g * Cg) * S();
        if (Mg == 0 || P() == 0 || rows == 0) {
          for (int64_t j = 0; j < f; ++j) std::memset(dxg + j * C * S(), 0, sizeof(T) * static_cast<size_t>(Cg * S()));
          continue;
        }
        dcol.resize(static_cast<size_t>(rows * f * P()));
        gemm(true, false, rows, f * P(), Mg, T(1), w + g * Mg * rows, rows, dy_of(n0, f, g, dyf), f * P(), T(0),
             dcol.data(), f * P());
        col2im(dcol.data(), f * P(), f, Cg, cg, dxg, C * S());
      }
    });
  }

  // dB[m] = sum of dY over images and positions, in double.
  void bias_grad(T* db) const {
    parallel_for(M, 1, [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t p = 0; p < P(); ++p) s += dy[(n * M + m) * P() + p];
        db[m] = static_cast<T>(s);
      }
    });
  }
};

Status conv_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& W = ctx.input(2);
  int64_t N = X.dims()[0], C = X.dims()[1], M = W.dims()[0];
  ASSIGN_OR_RETURN(int64_t group, conv_group(ctx.node()));
  std::vector<int64_t> spatial(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> kernel(W.dims().begin() + 2, W.dims().end());
  ASSIGN_OR_RETURN(auto geo, window_geometry(ctx.node(), spatial, kernel, false));
  const int64_t Cg = C / group, Mg = M / group;
  const ColumnGeometry cg = column_geometry(geo);
  const int64_t P = cg.positions;
  // The operands a file pairs must be one convolution's: the loops index dY
  // by N x M x P and W by its groups.
  if (C % group != 0 || M % group != 0 || W.dims()[1] != Cg || dY.numel() != N * M * P)
    return shape_error("{}: dY {}, X {} and W {} (group {}) are not one convolution's", ctx.node().describe(),
                       dims_to_string(dY.dims()), dims_to_string(X.dims()), dims_to_string(W.dims()), group);
  bool want_dx = ctx.has_output(0), want_dw = ctx.num_outputs() > 1 && ctx.has_output(1);
  bool want_db = ctx.num_outputs() > 2 && ctx.has_output(2);
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* w = W.data<T>();
    T* dx = want_dx ? ctx.output(0).data<T>() : nullptr;
    T* dw = want_dw ? ctx.output(1).data<T>() : nullptr;
    // The GEMMs run over the live taps' rows only (runtime/cpu/im2col.h): the
    // filter's columns of those taps for dX, and dW's gradient of those taps,
    // zero at the rest.
    const int64_t rows = Cg * cg.live();
    std::vector<T> live_w, live_dw;
    if (!cg.every_tap()) {
      if (dx) {
        live_w.resize(static_cast<size_t>(M * rows));
        live_tap_filter(w, M * Cg, cg, live_w.data());
        w = live_w.data();
      }
      if (dw) live_dw.resize(static_cast<size_t>(M * rows));
    }
    const ConvGradRun<T> run{X.data<T>(), w, dY.data<T>(), N, C, M, group, Cg, Mg, cg, rows,
                             conv_images_per_gemm(rows, P, N)};
    if (dw && rows > 0 && P > 0 && N > 0) {
      T* dw_live = cg.every_tap() ? dw : live_dw.data();
      run.weight_grad(dw_live);
      if (dw_live != dw) scatter_live_taps(dw_live, M * Cg, cg, dw);
    } else if (dw) {
      std::memset(dw, 0, sizeof(T) * static_cast<size_t>(W.numel()));
    }
    if (dx) run.input_grad(dx);
    if (want_db) run.bias_grad(ctx.output(2).data<T>());
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

}  // namespace

// float32: the GEMMs' library measured per shape (runtime/cpu/gemm_backend.h),
// or oneDNN's own convolution backward (runtime/cpu/onednn_conv.h).
ORT_REGISTER_KERNEL(kOrtTrainDomain, "ConvGrad", 1, 1000, DeviceKind::kCpu,
                    gemm_backend_choice(conv_grad, "onednn_conv", onednn_conv_backward));

}  // namespace ort_train
