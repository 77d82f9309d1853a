// GridSample's per-point arithmetic (4-D input, PyTorch's grid_sample, which
// ONNX's GridSample follows): for one grid point, the input positions it reads
// (taps), their weights, and each weight's derivative with respect to the
// point's two grid coordinates. The CPU kernels (runtime/cpu/kernels/grid_sample.cc)
// and the CUDA kernels (cuda_kernels/grid_sample.cu) both run it, forward
// (y = sum of w x) and backward (dX += w dY; dGrid = dY sum of x dw).
//
// Coordinates: a grid value g in [-1, 1] maps to the pixel coordinate
// (g + 1) / 2 (size - 1) with align_corners, else ((g + 1) size - 1) / 2.
// Bilinear and nearest pad that coordinate (border: clipped into the image;
// reflection: mirrored, then clipped) and read zero outside; bicubic pads
// each of its 16 taps instead, as PyTorch does.
#pragma once
#include <cmath>
#include <cstdint>

#include "numerics/host_device.h"

namespace ort_train {

enum class GridMode : int { kBilinear, kNearest, kBicubic };
enum class GridPadding : int { kZeros, kBorder, kReflection };

struct GridSampleParams {
  GridMode mode = GridMode::kBilinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
  int64_t height = 0, width = 0;  // the input's spatial size
};

// At most 16 taps (bicubic). A tap outside the input after padding has
// valid = false and reads zero.
template <typename T>
struct GridTaps {
  int count = 0;
  int64_t y[16], x[16];
  bool valid[16];
  T w[16], dw_dgx[16], dw_dgy[16];
};

// Pixel coordinate of grid value g along a dim of `size`, and d coordinate / d g.
template <typename T>
ORT_HOST_DEVICE T grid_unnormalize(T g, int64_t size, bool align_corners, T* d) {
  if (align_corners) {
    *d = static_cast<T>(size - 1) / T(2);
    return (g + T(1)) / T(2) * static_cast<T>(size - 1);
  }
  *d = static_cast<T>(size) / T(2);
  return ((g + T(1)) * static_cast<T>(size) - T(1)) / T(2);
}

// Clips into [0, size - 1]; *d becomes 0 where clipped.
template <typename T>
ORT_HOST_DEVICE T grid_clip(T c, int64_t size, T* d) {
  const T hi = static_cast<T>(size - 1);
  if (c <= T(0)) {
    *d = T(0);
    return T(0);
  }
  if (c >= hi) {
    *d = T(0);
    return hi;
  }
  return c;
}

// Mirrors c into [low, high] (given doubled, so half-pixel bounds stay
// integers); *d flips sign with each mirroring.
template <typename T>
ORT_HOST_DEVICE T grid_reflect(T c, int64_t twice_low, int64_t twice_high, T* d) {
  if (twice_low == twice_high) {
    *d = T(0);
    return T(0);
  }
  const T low = static_cast<T>(twice_low) / T(2), span = static_cast<T>(twice_high - twice_low) / T(2);
  T v = c - low;
  if (v < T(0)) {
    v = -v;
    *d = -*d;
  }
  const T extra = fmod(v, span);
  // The parity of the number of mirrorings, taken in floating point: no cast to overflow.
  if (fmod(floor(v / span), T(2)) == T(0)) return extra + low;
  *d = -*d;
  return span - extra + low;
}

// The padding of a coordinate along a dim of `size` (zeros leaves it alone).
template <typename T>
ORT_HOST_DEVICE T grid_pad(T c, int64_t size, const GridSampleParams& p, T* d) {
  if (p.padding == GridPadding::kBorder) return grid_clip(c, size, d);
  if (p.padding == GridPadding::kReflection) {
    c = p.align_corners ? grid_reflect(c, 0, 2 * (size - 1), d) : grid_reflect(c, -1, 2 * size - 1, d);
    return grid_clip(c, size, d);
  }
  return c;
}

// Keys' cubic convolution with A = -0.75 (PyTorch's and OpenCV's), for
// |x| <= 1 and 1 < |x| < 2, and their derivatives.
template <typename T>
ORT_HOST_DEVICE T cubic_near(T x) {
  const T a = T(-0.75);
  return ((a + T(2)) * x - (a + T(3))) * x * x + T(1);
}
template <typename T>
ORT_HOST_DEVICE T cubic_far(T x) {
  const T a = T(-0.75);
  return ((a * x - T(5) * a) * x + T(8) * a) * x - T(4) * a;
}
template <typename T>
ORT_HOST_DEVICE T cubic_near_slope(T x) {
  const T a = T(-0.75);
  return T(3) * (a + T(2)) * x * x - T(2) * (a + T(3)) * x;
}
template <typename T>
ORT_HOST_DEVICE T cubic_far_slope(T x) {
  const T a = T(-0.75);
  return T(3) * a * x * x - T(10) * a * x + T(8) * a;
}

// The 4 cubic weights of fraction t (taps at -1, 0, 1, 2) and d weight / d t.
template <typename T>
ORT_HOST_DEVICE void cubic_weights(T t, T* w, T* dw) {
  w[0] = cubic_far(t + T(1));
  w[1] = cubic_near(t);
  w[2] = cubic_near(T(1) - t);
  w[3] = cubic_far(T(2) - t);
  dw[0] = cubic_far_slope(t + T(1));
  dw[1] = cubic_near_slope(t);
  dw[2] = -cubic_near_slope(T(1) - t);
  dw[3] = -cubic_far_slope(T(2) - t);
}

// A tap position c (after padding, a whole number) as an index, when it lies
// inside [0, size). Checked in floating point before the cast, so a far-off
// or NaN grid value reads zero instead of overflowing the integer.
template <typename T>
ORT_HOST_DEVICE bool grid_index(T c, int64_t size, int64_t* i) {
  const bool inside = c >= T(0) && c < static_cast<T>(size);
  *i = inside ? static_cast<int64_t>(c) : 0;
  return inside;
}

// The taps of grid point (gx, gy): gx runs along the width, gy along the height.
template <typename T>
ORT_HOST_DEVICE void grid_sample_taps(T gx, T gy, const GridSampleParams& p, GridTaps<T>* taps) {
  T dx_dg, dy_dg;
  T ix = grid_unnormalize(gx, p.width, p.align_corners, &dx_dg);
  T iy = grid_unnormalize(gy, p.height, p.align_corners, &dy_dg);
  taps->count = 0;
  if (p.mode == GridMode::kBicubic) {
    const T x0 = floor(ix), y0 = floor(iy);
    T wx[4], dwx[4], wy[4], dwy[4];
    cubic_weights(ix - x0, wx, dwx);
    cubic_weights(iy - y0, wy, dwy);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        // Each tap padded on its own; its padded position moves with nothing (the weights carry the slope).
        T unused = T(1);
        const T ty = grid_pad(y0 - T(1) + static_cast<T>(i), p.height, p, &unused);
        const T tx = grid_pad(x0 - T(1) + static_cast<T>(j), p.width, p, &unused);
        const int k = taps->count++;
        const bool in_y = grid_index(ty, p.height, &taps->y[k]);
        const bool in_x = grid_index(tx, p.width, &taps->x[k]);
        taps->valid[k] = in_y && in_x;
        taps->w[k] = wy[i] * wx[j];
        taps->dw_dgx[k] = wy[i] * dwx[j] * dx_dg;
        taps->dw_dgy[k] = dwy[i] * wx[j] * dy_dg;
      }
    return;
  }
  ix = grid_pad(ix, p.width, p, &dx_dg);
  iy = grid_pad(iy, p.height, p, &dy_dg);
  if (p.mode == GridMode::kNearest) {
    // Round half to even, as PyTorch's nearbyint under the default rounding mode.
    const T rx = rint(ix), ry = rint(iy);
    const int k = taps->count++;
    const bool in_y = grid_index(ry, p.height, &taps->y[k]);
    const bool in_x = grid_index(rx, p.width, &taps->x[k]);
    taps->valid[k] = in_y && in_x;
    taps->w[k] = T(1);
    taps->dw_dgx[k] = T(0);
    taps->dw_dgy[k] = T(0);
    return;
  }
  const T x0 = floor(ix), y0 = floor(iy);
  const T fx = ix - x0, fy = iy - y0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const T wy = i ? fy : T(1) - fy, wx = j ? fx : T(1) - fx;
      const T sy = i ? T(1) : T(-1), sx = j ? T(1) : T(-1);  // d wy / d iy, d wx / d ix
      const int k = taps->count++;
      const bool in_y = grid_index(y0 + static_cast<T>(i), p.height, &taps->y[k]);
      const bool in_x = grid_index(x0 + static_cast<T>(j), p.width, &taps->x[k]);
      taps->valid[k] = in_y && in_x;
      taps->w[k] = wy * wx;
      taps->dw_dgx[k] = wy * sx * dx_dg;
      taps->dw_dgy[k] = sy * wx * dy_dg;
    }
}

// One grid point of one image, forward: y[ch * points] for every channel ch,
// from the image's planes x[ch * plane] (plane = height * width).
template <typename T>
ORT_HOST_DEVICE void grid_sample_point(const GridTaps<T>& taps, const GridSampleParams& p, const T* x, int64_t channels,
                                       T* y, int64_t points) {
  const int64_t plane = p.height * p.width;
  for (int64_t ch = 0; ch < channels; ++ch) {
    T acc = T(0);
    for (int k = 0; k < taps.count; ++k)
      if (taps.valid[k]) acc += taps.w[k] * x[ch * plane + taps.y[k] * p.width + taps.x[k]];
    y[ch * points] = acc;
  }
}

// One grid point of one image, backward: add_dx(offset in the image's planes,
// value) for each tap of each channel (the CPU adds, the GPU adds atomically),
// and the point's dGrid into *ggx, *ggy. dy and x as grid_sample_point's y and x.
template <typename T, typename AddDx>
ORT_HOST_DEVICE void grid_sample_point_grad(const GridTaps<T>& taps, const GridSampleParams& p, const T* dy,
                                            int64_t points, const T* x, int64_t channels, AddDx&& add_dx, T* ggx,
                                            T* ggy) {
  const int64_t plane = p.height * p.width;
  *ggx = T(0);
  *ggy = T(0);
  for (int64_t ch = 0; ch < channels; ++ch) {
    const T g = dy[ch * points];
    for (int k = 0; k < taps.count; ++k) {
      if (!taps.valid[k]) continue;
      const int64_t at = ch * plane + taps.y[k] * p.width + taps.x[k];
      add_dx(at, taps.w[k] * g);
      *ggx += g * x[at] * taps.dw_dgx[k];
      *ggy += g * x[at] * taps.dw_dgy[k];
    }
  }
}

}  // namespace ort_train
