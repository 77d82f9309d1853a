// CPU kernel: Conv (1-D/2-D/3-D, groups, strides, dilations, pads) as im2col +
// a GEMM per (images, group): images with few positions each sit side by side
// in one GEMM (runtime/cpu/im2col.h) (float32: OpenBLAS's or oneDNN's,
// measured, and oneDNN's own convolution a third candidate), over the window's
// live taps only. A 1x1 stride-1 unpadded conv of one image at a time skips
// im2col.
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

Status conv(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  Tensor& Y = ctx.output(0);
  int64_t N = X.dims()[0], C = X.dims()[1], M = W.dims()[0];
  ASSIGN_OR_RETURN(int64_t group, conv_group(ctx.node()));
  std::vector<int64_t> spatial(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> kernel(W.dims().begin() + 2, W.dims().end());
  ASSIGN_OR_RETURN(auto geo, window_geometry(ctx.node(), spatial, kernel, false));
  if (M % group != 0) return shape_error("{}: {} output channels do not divide into {} groups", ctx.node().describe(), M, group);
  const int64_t Cg = C / group, Mg = M / group;
  const ColumnGeometry cg = column_geometry(geo);
  const int64_t P = cg.positions, S = cg.image;
  bool pointwise = true;
  for (const WindowDim& w : geo)
    pointwise = pointwise && w.kernel == 1 && w.stride == 1 && w.pad_begin == 0 && w.pad_end == 0;
  if (Y.numel() == 0) return Status::Ok();
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* w = W.data<T>();
    T* y = Y.data<T>();
    // The GEMMs run over the live taps' rows only (runtime/cpu/im2col.h),
    // with the filter's columns of those taps.
    std::vector<T> live_w;
    if (!cg.every_tap()) {
      live_w.resize(static_cast<size_t>(M * Cg * cg.live()));
      live_tap_filter(w, M * Cg, cg, live_w.data());
      w = live_w.data();
    }
    // Images side by side in one GEMM where each has few positions
    // (runtime/cpu/im2col.h); one alone is read and written in place.
    const int64_t rows = Cg * cg.live(), fold = conv_images_per_gemm(rows, P, N), blocks = (N + fold - 1) / fold;
    for_each_gemm(blocks * group, Mg * P * rows * fold, [&](int64_t first, int64_t last) {
      std::vector<T> col, yf;
      for (int64_t t = first; t < last; ++t) {
        const int64_t n0 = (t / group) * fold, g = t % group, f = std::min(fold, N - n0);
        if (rows == 0) {
          for (int64_t j = 0; j < f; ++j)
            std::memset(y + ((n0 + j) * M + g * Mg) * P, 0, sizeof(T) * static_cast<size_t>(Mg * P));
          continue;
        }
        const T* src;
        if (f == 1 && pointwise) {
          src = x + (n0 * C + g * Cg) * S;
        } else {
          col.resize(static_cast<size_t>(rows * f * P));
          im2col(x + (n0 * C + g * Cg) * S, f, C * S, Cg, cg, col.data(), f * P);
          src = col.data();
        }
        T* out = y + (n0 * M + g * Mg) * P;
        if (f > 1) {
          yf.resize(static_cast<size_t>(Mg * f * P));
          out = yf.data();
        }
        gemm(false, false, Mg, f * P, rows, T(1), w + g * Mg * rows, rows, src, f * P, T(0), out, f * P);
        if (f > 1)
          for (int64_t j = 0; j < f; ++j)
            take_columns(yf.data(), f * P, j * P, Mg, P, y + ((n0 + j) * M + g * Mg) * P);
      }
    });
    if (ctx.has_input(2)) {
      const T* bias = ctx.input(2).data<T>();
      parallel_for(N * M, std::max<int64_t>(1, 4096 / P), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          T bv = bias[t % M];
          T* row = y + t * P;
          for (int64_t p = 0; p < P; ++p) row[p] += bv;
        }
      });
    }
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

}  // namespace

// float32: the GEMMs' library measured, or oneDNN's own convolution.
ORT_REGISTER_CPU_KERNEL("Conv", 1, 1000, gemm_backend_choice(conv, "onednn_conv", onednn_conv_forward));

}  // namespace ort_train
