// The walk over one pooling window, shared by the pooling kernels and their
// gradients so both see the same positions: for output position `o` (one index
// per spatial dim), every window element's input coordinates, whether they lie
// inside the input, and whether they lie inside the padded input.
#pragma once
#include <vector>

#include "graph/ops/window_geometry.h"

namespace ort_train {

// fn(const std::vector<int64_t>& coords, int64_t row_major_offset, bool inside, bool in_padded)
template <typename F>
inline void for_each_window_element(const std::vector<WindowDim>& geo, const std::vector<int64_t>& o, F&& fn) {
  size_t nd = geo.size();
  int64_t win = 1;
  for (const WindowDim& w : geo) win *= w.kernel;
  std::vector<int64_t> coords(nd);
  for (int64_t q = 0; q < win; ++q) {
    int64_t rem = q, off = 0, stride = 1;
    bool inside = true, in_padded = true;
    for (size_t d = nd; d-- > 0;) {
      int64_t k = rem % geo[d].kernel;
      rem /= geo[d].kernel;
      int64_t i = o[d] * geo[d].stride - geo[d].pad_begin + k * geo[d].dilation;
      coords[d] = i;
      if (i < 0 || i >= geo[d].in) inside = false;
      if (i < -geo[d].pad_begin || i >= geo[d].in + geo[d].pad_end) in_padded = false;
      off += i * stride;
      stride *= geo[d].in;
    }
    fn(coords, off, inside, in_padded);
  }
}

// Advances `o` to the next output position in row-major order.
inline void next_window(const std::vector<WindowDim>& geo, std::vector<int64_t>& o) {
  for (size_t d = geo.size(); d-- > 0;) {
    if (++o[d] < geo[d].out) return;
    o[d] = 0;
  }
}

}  // namespace ort_train
