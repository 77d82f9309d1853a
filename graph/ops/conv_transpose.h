// ConvTranspose's geometry, shared by its shape rule, its kernel and its
// gradient: per spatial dim a WindowDim seen from the *output* side, i.e. the
// Conv that maps the output back to the input: `in` is the output's size,
// `out` the input's, with the same kernel, stride, dilation and pads.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "graph/ops/window_geometry.h"

namespace ort_train {

Result<std::vector<WindowDim>> conv_transpose_geometry(const Node& node, const std::vector<int64_t>& spatial_in,
                                                       const std::vector<int64_t>& kernel);

}  // namespace ort_train
