// Resize's sampling, shared by its kernel and its gradient: for every output
// index along a dim, the input indices it reads and their weights (one tap for
// nearest, two for linear; the gradient adds back along the same taps).
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

struct ResizeTap {
  int64_t i0 = 0, i1 = 0;
  double w0 = 1, w1 = 0;
};

// Taps of one dim resized from n to m with `scale` (m / n when sizes were given).
// `opset` 10 Resize is asymmetric with floor for nearest.
inline std::vector<ResizeTap> resize_taps(const Node& node, int64_t opset, int64_t n, int64_t m, double scale) {
  std::string mode = node.attr_string("mode", "nearest");
  std::string coord = opset >= 11 ? node.attr_string("coordinate_transformation_mode", "half_pixel") : "asymmetric";
  std::string nearest = opset >= 11 ? node.attr_string("nearest_mode", "round_prefer_floor") : "floor";
  std::vector<ResizeTap> taps(static_cast<size_t>(m));
  // The output's length before rounding: ONNX's transforms use it, not m,
  // when a scale does not land on a whole size.
  const double out_f = scale * static_cast<double>(n);
  for (int64_t o = 0; o < m; ++o) {
    double x;
    if (n == m && scale == 1.0) x = static_cast<double>(o);
    else if (coord == "align_corners") x = out_f == 1 ? 0.0 : static_cast<double>(o) * static_cast<double>(n - 1) / (out_f - 1);
    else if (coord == "asymmetric") x = static_cast<double>(o) / scale;
    else if (coord == "pytorch_half_pixel") x = out_f > 1 ? (static_cast<double>(o) + 0.5) / scale - 0.5 : 0.0;
    else if (coord == "half_pixel_symmetric") {  // opset 19: the rounded output's centre on the input's
      double offset = static_cast<double>(n) / 2 * (1 - static_cast<double>(m) / out_f);
      x = offset + (static_cast<double>(o) + 0.5) / scale - 0.5;
    } else x = (static_cast<double>(o) + 0.5) / scale - 0.5;  // half_pixel
    ResizeTap& t = taps[static_cast<size_t>(o)];
    if (mode == "nearest") {
      double r;
      if (nearest == "floor") r = std::floor(x);
      else if (nearest == "ceil") r = std::ceil(x);
      else if (nearest == "round_prefer_ceil") r = std::floor(x + 0.5);
      else r = std::ceil(x - 0.5);  // round_prefer_floor: halves go down
      t.i0 = t.i1 = std::clamp<int64_t>(static_cast<int64_t>(r), 0, n - 1);
    } else {
      x = std::clamp(x, 0.0, static_cast<double>(n - 1));
      int64_t lo = static_cast<int64_t>(std::floor(x));
      t.i0 = lo;
      t.i1 = std::min(lo + 1, n - 1);
      t.w1 = x - static_cast<double>(lo);
      t.w0 = 1.0 - t.w1;
    }
  }
  return taps;
}

}  // namespace ort_train
