// CPU kernel: Conv (1-D/2-D/3-D, groups, strides, dilations, pads) as im2col +
// OpenBLAS GEMM per (image, group). A 1x1 stride-1 unpadded conv skips im2col.
#include <cstring>

#include "graph/dispatch.h"
#include "graph/ops/window_geometry.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// col[(c*K + kidx), p] = x[c, in coords of (kidx, p)] or 0 in the padding.
template <typename T>
void im2col(const T* x, int64_t channels, const std::vector<WindowDim>& geo, T* col) {
  int64_t nd = static_cast<int64_t>(geo.size());
  int64_t kernel_size = 1, out_size = 1, in_size = 1;
  for (const WindowDim& w : geo) {
    kernel_size *= w.kernel;
    out_size *= w.out;
    in_size *= w.in;
  }
  parallel_for(channels * kernel_size, 1, [&](int64_t b, int64_t e) {
    std::vector<int64_t> k(static_cast<size_t>(nd)), o(static_cast<size_t>(nd)), base(static_cast<size_t>(nd));
    for (int64_t r = b; r < e; ++r) {
      int64_t c = r / kernel_size, rem = r % kernel_size;
      for (int64_t d = nd - 1; d >= 0; --d) {
        k[d] = rem % geo[d].kernel;
        rem /= geo[d].kernel;
      }
      const T* xc = x + c * in_size;
      T* row = col + r * out_size;
      std::fill(o.begin(), o.end(), 0);
      const WindowDim& last = geo[nd - 1];
      for (int64_t p = 0; p < out_size; p += last.out) {
        // Offset of the row of input elements for all dims but the last; -1 if in padding.
        int64_t off = 0;
        bool inside = true;
        for (int64_t d = 0; d < nd - 1; ++d) {
          int64_t i = o[d] * geo[d].stride - geo[d].pad_begin + k[d] * geo[d].dilation;
          if (i < 0 || i >= geo[d].in) inside = false;
          off = off * geo[d].in + i;
        }
        off *= last.in;
        for (int64_t j = 0; j < last.out; ++j) {
          int64_t i = j * last.stride - last.pad_begin + k[nd - 1] * last.dilation;
          row[p + j] = (inside && i >= 0 && i < last.in) ? xc[off + i] : T(0);
        }
        for (int64_t d = nd - 2; d >= 0; --d) {
          if (++o[d] < geo[d].out) break;
          o[d] = 0;
        }
      }
    }
  });
}

Status conv(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  Tensor& Y = ctx.output(0);
  int64_t N = X.dims()[0], C = X.dims()[1], M = W.dims()[0];
  int64_t group = ctx.node().attr_int("group", 1);
  std::vector<int64_t> spatial(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> kernel(W.dims().begin() + 2, W.dims().end());
  ASSIGN_OR_RETURN(auto geo, window_geometry(ctx.node(), spatial, kernel, false));
  if (M % group != 0) return shape_error("{}: {} output channels do not divide into {} groups", ctx.node().describe(), M, group);
  int64_t Cg = C / group, Mg = M / group, K = 1, P = 1, S = 1;
  bool pointwise = true;
  for (const WindowDim& w : geo) {
    K *= w.kernel;
    P *= w.out;
    S *= w.in;
    pointwise = pointwise && w.kernel == 1 && w.stride == 1 && w.pad_begin == 0 && w.pad_end == 0;
  }
  if (Y.numel() == 0) return Status::Ok();
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* w = W.data<T>();
    T* y = Y.data<T>();
    std::vector<T> col(pointwise ? 0 : static_cast<size_t>(Cg * K * P));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < group; ++g) {
        const T* xg = x + (n * C + g * Cg) * S;
        const T* src = xg;
        if (!pointwise) {
          im2col(xg, Cg, geo, col.data());
          src = col.data();
        }
        T* yg = y + (n * M + g * Mg) * P;
        if (Cg * K == 0) std::memset(yg, 0, sizeof(T) * static_cast<size_t>(Mg * P));
        else gemm(false, false, Mg, P, Cg * K, T(1), w + g * Mg * Cg * K, Cg * K, src, P, T(0), yg, P);
      }
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

ORT_REGISTER_CPU_KERNEL("Conv", 1, 1000, conv);

}  // namespace ort_train
