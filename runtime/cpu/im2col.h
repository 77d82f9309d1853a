// im2col and its adjoint col2im over 1-D/2-D/3-D windows: Conv is a GEMM over
// the column matrix; its gradient needs the column matrix of the input (for dW)
// and the scatter-add of a column-matrix gradient back into the input (for dX).
#pragma once
#include <algorithm>
#include <vector>

#include "graph/ops/window_geometry.h"
#include "runtime/cpu/parallel.h"

namespace ort_train {

// col[(c*K + kidx), p] = x[c, in coords of (kidx, p)] or 0 in the padding.
template <typename T>
inline void im2col(const T* x, int64_t channels, const std::vector<WindowDim>& geo, T* col) {
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

// x[c, i] += col[(c*K + kidx), p] for every window position inside the input:
// the adjoint of im2col. Parallel over channels, each owning its rows (no races).
template <typename T>
inline void col2im(const T* col, int64_t channels, const std::vector<WindowDim>& geo, T* x) {
  int64_t nd = static_cast<int64_t>(geo.size());
  int64_t kernel_size = 1, out_size = 1, in_size = 1;
  for (const WindowDim& w : geo) {
    kernel_size *= w.kernel;
    out_size *= w.out;
    in_size *= w.in;
  }
  parallel_for(channels, 1, [&](int64_t b, int64_t e) {
    std::vector<int64_t> k(static_cast<size_t>(nd)), o(static_cast<size_t>(nd));
    for (int64_t c = b; c < e; ++c) {
      T* xc = x + c * in_size;
      std::fill(xc, xc + in_size, T(0));
      for (int64_t kk = 0; kk < kernel_size; ++kk) {
        int64_t rem = kk;
        for (int64_t d = nd - 1; d >= 0; --d) {
          k[d] = rem % geo[d].kernel;
          rem /= geo[d].kernel;
        }
        const T* row = col + (c * kernel_size + kk) * out_size;
        std::fill(o.begin(), o.end(), 0);
        const WindowDim& last = geo[nd - 1];
        for (int64_t p = 0; p < out_size; p += last.out) {
          int64_t off = 0;
          bool inside = true;
          for (int64_t d = 0; d < nd - 1; ++d) {
            int64_t i = o[d] * geo[d].stride - geo[d].pad_begin + k[d] * geo[d].dilation;
            if (i < 0 || i >= geo[d].in) inside = false;
            off = off * geo[d].in + i;
          }
          off *= last.in;
          if (inside)
            for (int64_t j = 0; j < last.out; ++j) {
              int64_t i = j * last.stride - last.pad_begin + k[nd - 1] * last.dilation;
              if (i >= 0 && i < last.in) xc[off + i] += row[p + j];
            }
          for (int64_t d = nd - 2; d >= 0; --d) {
            if (++o[d] < geo[d].out) break;
            o[d] = 0;
          }
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

}  // namespace ort_train
