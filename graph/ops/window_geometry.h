// Geometry of sliding-window ops (Conv, MaxPool, AveragePool): per spatial
// dim the kernel size, stride, dilation, begin/end padding (auto_pad resolved)
// and output size. Shared by the shape rules and the kernels.
#pragma once
#include <vector>

#include "graph/graph.h"

namespace ort_train {

struct WindowDim {
  int64_t in = 0, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0, out = 0;
};

// `spatial_in` are the input's spatial sizes; `kernel` the window sizes
// (from kernel_shape, or the weight's spatial dims for Conv). `ceil_mode`
// applies to pools only.
Result<std::vector<WindowDim>> window_geometry(const Node& node, const std::vector<int64_t>& spatial_in,
                                               const std::vector<int64_t>& kernel, bool allow_ceil_mode);

// Conv's, ConvTranspose's and ConvGrad's `group` (default 1), refused below 1:
// the rules and kernels divide channel counts by it.
Result<int64_t> conv_group(const Node& node);

// LpPool's and GlobalLpPool's p: a float before opset 2, an int (default 2)
// since; refused below 1 (graph/ops/conv_pool.cc).
Result<int64_t> lp_pool_order(const Node& node, int64_t opset);

}  // namespace ort_train
