// Resize's sampling, shared by its kernel and its gradient: for every output
// index along a dim, the input indices it reads and their weights, or that
// it lies outside the input (tf_crop_and_resize: extrapolation_value). The
// gradient adds back along the same taps. As ONNX's reference:
//   - nearest: one tap, by nearest_mode;
//   - linear: two taps around the source coordinate, clamped into the input;
//   - cubic: four taps (cubic_coeff_a), the input edge-padded;
//   - antialias (opset 18, linear and cubic, when downsampling): the filter
//     stretched by 1 / scale, so more taps, normalized to sum to 1;
//   - exclude_outside: taps past the input get weight 0, the rest renormalized.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

struct ResizeTap {
  std::vector<int64_t> index;  // inside [0, n)
  std::vector<double> weight;
  bool outside = false;  // tf_crop_and_resize past the input: no taps
};

// Cubic convolution's kernel at distance d (Keys, with coefficient a).
inline double cubic_kernel(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// Taps of one dim resized from n to m with `scale` (m / n when sizes were
// given); `roi` is this dim's [start, end] (tf_crop_and_resize only).
// `opset` 10 Resize is asymmetric with floor for nearest.
inline std::vector<ResizeTap> resize_taps(const Node& node, int64_t opset, int64_t n, int64_t m, double scale,
                                          double roi_start = 0, double roi_end = 1) {
  const std::string mode = node.attr_string("mode", "nearest");
  const std::string coord =
      opset >= 11 ? node.attr_string("coordinate_transformation_mode", "half_pixel") : "asymmetric";
  const std::string nearest = opset >= 11 ? node.attr_string("nearest_mode", "round_prefer_floor") : "floor";
  const bool antialias = node.attr_int("antialias", 0) != 0 && mode != "nearest";
  const bool exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  const double a = node.attr_float("cubic_coeff_a", -0.75f);
  std::vector<ResizeTap> taps(static_cast<size_t>(m));
  // The output's length before rounding: ONNX's transforms use it, not m,
  // when a scale does not land on a whole size.
  const double out_f = scale * static_cast<double>(n);
  const double last = static_cast<double>(n - 1);
  for (int64_t o = 0; o < m; ++o) {
    const auto of = static_cast<double>(o);
    ResizeTap& t = taps[static_cast<size_t>(o)];
    double x;
    if (coord == "tf_crop_and_resize") {
      x = (out_f == 1 ? (roi_end - roi_start) * last / 2 : of * (roi_end - roi_start) * last / (out_f - 1)) +
          roi_start * last;
      if (x < 0 || x > last) {
        t.outside = true;
        continue;
      }
    } else if (n == m && scale == 1.0) x = of;
    else if (coord == "align_corners") x = out_f == 1 ? 0.0 : of * last / (out_f - 1);
    else if (coord == "asymmetric") x = of / scale;
    else if (coord == "pytorch_half_pixel") x = out_f > 1 ? (of + 0.5) / scale - 0.5 : 0.0;
    else if (coord == "half_pixel_symmetric") {  // opset 19: the rounded output's centre on the input's
      double offset = static_cast<double>(n) / 2 * (1 - static_cast<double>(m) / out_f);
      x = offset + (of + 0.5) / scale - 0.5;
    } else x = (of + 0.5) / scale - 0.5;  // half_pixel
    if (mode == "nearest") {
      double r;
      if (nearest == "floor") r = std::floor(x);
      else if (nearest == "ceil") r = std::ceil(x);
      else if (nearest == "round_prefer_ceil") r = std::floor(x + 0.5);
      else r = std::ceil(x - 0.5);  // round_prefer_floor: halves go down
      t.index = {std::clamp<int64_t>(static_cast<int64_t>(r), 0, n - 1)};
      t.weight = {1.0};
    } else if (mode == "linear" && !antialias && !exclude_outside) {
      x = std::clamp(x, 0.0, last);
      const auto lo = static_cast<int64_t>(std::floor(x));
      const double w1 = x - static_cast<double>(lo);
      t.index = {lo, std::min(lo + 1, n - 1)};
      t.weight = {1.0 - w1, w1};
    } else {
      // The window of 2 * support / s taps around x, s = min(scale, 1) with
      // antialias (else 1), starting left of x: ratio in (0, 1].
      const bool cubic = mode == "cubic";
      const double support = cubic ? 2 : 1;
      const double s = antialias ? std::min(scale, 1.0) : 1.0;
      const int64_t start = static_cast<int64_t>(std::floor(-support / s)) + 1;
      const int64_t count = 2 - 2 * start;
      const double fl = std::floor(x);
      const auto lo = static_cast<int64_t>(x == fl ? fl - 1 : fl);
      const double ratio = x - static_cast<double>(lo);
      double sum = 0;
      for (int64_t i = 0; i < count; ++i) {
        const double d = s * (static_cast<double>(start + i) - ratio);
        const double w = cubic ? cubic_kernel(d, a) : std::max(0.0, 1 - std::abs(d));
        t.index.push_back(lo + start + i);
        t.weight.push_back(w);
        sum += w;
      }
      if (antialias)
        for (double& w : t.weight) w /= sum;
      if (exclude_outside) {
        double kept = 0;
        for (size_t i = 0; i < t.index.size(); ++i) {
          if (t.index[i] < 0 || t.index[i] >= n) t.weight[i] = 0;
          kept += t.weight[i];
        }
        if (kept != 0)
          for (double& w : t.weight) w /= kept;
      }
      for (int64_t& i : t.index) i = std::clamp<int64_t>(i, 0, n - 1);  // edge padding
    }
  }
  return taps;
}

}  // namespace ort_train
