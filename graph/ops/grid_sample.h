// GridSample's attributes and shapes, checked once for the shape rule and the
// CPU and CUDA kernels (graph/ops/grid_sample.cc); its arithmetic is
// numerics/grid_sample.h's.
#pragma once

#include "graph/graph.h"
#include "graph/tensor.h"
#include "numerics/grid_sample.h"

namespace ort_train {

// mode (bilinear, nearest, bicubic; opset 20's linear and cubic too),
// padding_mode (zeros, border, reflection) and align_corners, for an input X
// [N, C, H, W] and a grid [N, H_out, W_out, 2] (4-D only).
Result<GridSampleParams> grid_sample_params(const Node& node, const Dims& x, const Dims& grid);

}  // namespace ort_train
