// im2col and its adjoint col2im over windows of any number of spatial dims,
// several images at a time: Conv is a GEMM over the column matrix; its
// gradient needs the column matrix of the input (for dW) and the scatter-add
// of a column-matrix gradient back into the input (for dX).
//
// The column matrix has a row per (channel, live tap) and a column per
// (image, output position): image j's P positions are columns [j*P, (j+1)*P)
// of a matrix whose rows are `ld` apart, so images with few positions each
// sit side by side in one GEMM without a copy.
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>

#include "graph/ops/window_geometry.h"
#include "runtime/cpu/parallel.h"

namespace ort_train {

// A convolution's window and the taps whose rows of the column matrix hold
// some input: a tap whose every position falls in the padding has a row of
// zeros. A 3x3 window padded by 1 over a 1x1 image (ResNet's last stage at
// 32x32) has one live tap of nine; its GEMMs run over that tap alone, a ninth
// of the work, and the dead taps' weights get a gradient of exactly zero, as
// they would through the zeros.
struct ColumnGeometry {
  std::vector<WindowDim> dims;
  std::vector<int64_t> taps;  // the live taps' offsets in the whole window (row-major)
  // Per live tap, the input row (all dims but the last, row-major) that each
  // output row reads, or -1 for a row in the padding: [live taps x out_rows].
  std::vector<int64_t> tap_rows;
  // Per live tap, along the last dim: output positions [lo, hi) read input
  // position p * stride + shift, the rest the padding.
  struct LastDimRun {
    int64_t lo, hi, shift;
  };
  std::vector<LastDimRun> tap_runs;
  int64_t out_rows = 1;             // output rows of one image: P / the last dim's positions
  int64_t window = 1;               // taps in the whole window
  int64_t positions = 1;            // output positions of one image (P)
  int64_t image = 1;                // input positions of one channel (S)

  int64_t live() const { return static_cast<int64_t>(taps.size()); }
  bool every_tap() const { return live() == window; }
};

namespace column_detail {

// ceil(a / b) for b > 0 and any a.
inline int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Calls run(out_row, in_row) for every row of one tap's output positions (all
// dims but the last), in_row = -1 where that row lies in the padding; rows
// are numbered in their own dims' row-major order.
template <typename F>
inline void for_each_row(const ColumnGeometry& g, const int64_t* k, size_t d, int64_t out_row, int64_t in_row, F& run) {
  if (d + 1 >= g.dims.size()) {
    run(out_row, in_row);
    return;
  }
  const WindowDim& w = g.dims[d];
  for (int64_t o = 0; o < w.out; ++o) {
    const int64_t i = o * w.stride - w.pad_begin + k[d] * w.dilation;
    const bool inside = in_row >= 0 && i >= 0 && i < w.in;
    for_each_row(g, k, d + 1, out_row * w.out + o, inside ? in_row * w.in + i : -1, run);
  }
}

// The run of the last dim's kernel index k (ColumnGeometry::LastDimRun).
inline ColumnGeometry::LastDimRun last_dim_run(const WindowDim& w, int64_t k) {
  const int64_t shift = k * w.dilation - w.pad_begin;
  const int64_t lo = std::clamp<int64_t>(ceil_div(-shift, w.stride), 0, w.out);
  const int64_t hi = std::clamp<int64_t>(ceil_div(w.in - shift, w.stride), lo, w.out);
  return {lo, hi, shift};
}

}  // namespace column_detail

// only_live_taps false keeps every tap (ConvTranspose scatters through the
// whole window).
inline ColumnGeometry column_geometry(const std::vector<WindowDim>& geo, bool only_live_taps = true) {
  ColumnGeometry g;
  g.dims = geo;
  const size_t nd = geo.size();
  std::vector<std::vector<int64_t>> live(nd);
  for (size_t d = 0; d < nd; ++d) {
    const WindowDim& w = geo[d];
    g.window *= w.kernel;
    g.positions *= w.out;
    g.image *= w.in;
    if (d + 1 < nd) g.out_rows *= w.out;
    for (int64_t k = 0; k < w.kernel; ++k) {
      bool any = !only_live_taps;
      for (int64_t o = 0; o < w.out && !any; ++o) {
        const int64_t i = o * w.stride - w.pad_begin + k * w.dilation;
        any = i >= 0 && i < w.in;
      }
      if (any) live[d].push_back(k);
    }
  }
  // Every combination of live kernel indices, the last dim fastest.
  std::vector<size_t> at(nd, 0);
  std::vector<int64_t> k(nd);  // the tap's kernel index in each dim
  bool empty = nd == 0;
  for (const auto& l : live) empty = empty || l.empty();
  while (!empty) {
    int64_t offset = 0;
    for (size_t d = 0; d < nd; ++d) {
      k[d] = live[d][at[d]];
      offset = offset * geo[d].kernel + k[d];
    }
    g.taps.push_back(offset);
    auto note = [&](int64_t, int64_t in_row) { g.tap_rows.push_back(in_row); };
    column_detail::for_each_row(g, k.data(), 0, 0, 0, note);
    g.tap_runs.push_back(column_detail::last_dim_run(geo.back(), k.back()));
    size_t d = nd;
    while (d-- > 0 && ++at[d] == live[d].size()) at[d] = 0;
    if (d == static_cast<size_t>(-1)) break;
  }
  return g;
}

// col[c*L + t, j*P + p] = image j's x[c, the input position of tap t at p], or
// 0 in the padding (L live taps). Image j's channel c starts at
// x + j*image_stride + c*S.
template <typename T>
inline void im2col(const T* x, int64_t images, int64_t image_stride, int64_t channels, const ColumnGeometry& g,
                   T* col, int64_t ld) {
  const int64_t L = g.live(), P = g.positions, rows = channels * L;
  if (rows == 0 || P == 0 || images == 0) return;
  const WindowDim& last = g.dims.back();
  const int64_t width = last.out, in_width = last.in, stride = last.stride;
  parallel_for(rows, std::max<int64_t>(1, 16384 / (images * P)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t c = r / L, t = r % L;
      const ColumnGeometry::LastDimRun& run = g.tap_runs[static_cast<size_t>(t)];
      const int64_t* in_rows = g.tap_rows.data() + t * g.out_rows;
      for (int64_t j = 0; j < images; ++j) {
        const T* xc = x + j * image_stride + c * g.image;
        T* out = col + r * ld + j * P;
        // Plain loops, not memcpy/fill: a deep layer's rows are a few elements.
        for (int64_t q = 0; q < g.out_rows; ++q, out += width) {
          if (in_rows[q] < 0) {
            for (int64_t p = 0; p < width; ++p) out[p] = T(0);
            continue;
          }
          const T* src = xc + in_rows[q] * in_width;
          for (int64_t p = 0; p < run.lo; ++p) out[p] = T(0);
          if (stride == 1)
            for (int64_t p = run.lo; p < run.hi; ++p) out[p] = src[p + run.shift];
          else
            for (int64_t p = run.lo; p < run.hi; ++p) out[p] = src[p * stride + run.shift];
          for (int64_t p = run.hi; p < width; ++p) out[p] = T(0);
        }
      }
    }
  });
}

// The adjoint: image j's x[c, i] = the sum of col[c*L + t, j*P + p] over the
// (t, p) that read position i, taps in order (the same bits at any thread
// count). Every image's channel is written, zero where no tap reads it.
template <typename T>
inline void col2im(const T* col, int64_t ld, int64_t images, int64_t channels, const ColumnGeometry& g, T* x,
                   int64_t image_stride) {
  const int64_t L = g.live(), P = g.positions;
  const WindowDim& last = g.dims.back();
  const int64_t width = last.out, in_width = last.in, stride = last.stride;
  parallel_for(images * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(L * P, 1)), [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      const int64_t j = q / channels, c = q % channels;
      T* xc = x + j * image_stride + c * g.image;
      for (int64_t i = 0; i < g.image; ++i) xc[i] = T(0);
      for (int64_t t = 0; t < L && P > 0; ++t) {
        const ColumnGeometry::LastDimRun& run = g.tap_runs[static_cast<size_t>(t)];
        const int64_t* in_rows = g.tap_rows.data() + t * g.out_rows;
        const T* src = col + (c * L + t) * ld + j * P;
        for (int64_t u = 0; u < g.out_rows; ++u, src += width) {
          if (in_rows[u] < 0) continue;
          T* dst = xc + in_rows[u] * in_width;
          if (stride == 1)
            for (int64_t p = run.lo; p < run.hi; ++p) dst[p + run.shift] += src[p];
          else
            for (int64_t p = run.lo; p < run.hi; ++p) dst[p * stride + run.shift] += src[p];
        }
      }
    }
  });
}

// How many images a convolution's GEMM takes side by side (their P columns
// each next to each other): enough for 256 columns, where a deep layer of a
// small image has a few positions and one GEMM per image would be a few
// matrix-vector products, and no more than keep `rows` x columns within 16 MiB
// of float32. One when an image alone has 256 positions.
inline int64_t conv_images_per_gemm(int64_t rows, int64_t P, int64_t N) {
  constexpr int64_t kColumns = 256, kElements = int64_t{1} << 22;
  const int64_t wanted = (kColumns + std::max<int64_t>(P, 1) - 1) / std::max<int64_t>(P, 1);
  const int64_t room = std::max<int64_t>(1, kElements / std::max<int64_t>(rows * P, 1));
  return std::max<int64_t>(1, std::min({wanted, room, N}));
}

// Copies `rows` rows of `cols` from `src` (leading dimension `cols`) into
// columns [at, at + cols) of `dst` (leading dimension `ld`), and back.
template <typename T>
inline void place_columns(const T* src, int64_t rows, int64_t cols, T* dst, int64_t ld, int64_t at) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy(src + r * cols, src + (r + 1) * cols, dst + r * ld + at);
}
template <typename T>
inline void take_columns(const T* src, int64_t ld, int64_t at, int64_t rows, int64_t cols, T* dst) {
  for (int64_t r = 0; r < rows; ++r) std::copy(src + r * ld + at, src + r * ld + at + cols, dst + r * cols);
}

// The filter [M, Cg*K] with only the live taps' columns: [M, Cg*L] (a group's
// filters are a block of its rows either way, so one call covers every group).
template <typename T>
inline void live_tap_filter(const T* w, int64_t filter_rows /* M * Cg */, const ColumnGeometry& g, T* out) {
  const int64_t K = g.window, L = g.live();
  parallel_for(filter_rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(K, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      for (int64_t t = 0; t < L; ++t) out[r * L + t] = w[r * K + g.taps[static_cast<size_t>(t)]];
  });
}

// The adjoint for dW: the live taps' gradients into their places, zero at
// every dead tap.
template <typename T>
inline void scatter_live_taps(const T* live, int64_t filter_rows /* M * Cg */, const ColumnGeometry& g, T* w) {
  const int64_t K = g.window, L = g.live();
  parallel_for(filter_rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(K, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      for (int64_t k = 0; k < K; ++k) w[r * K + k] = T(0);
      for (int64_t t = 0; t < L; ++t) w[r * K + g.taps[static_cast<size_t>(t)]] = live[r * L + t];
    }
  });
}

}  // namespace ort_train
