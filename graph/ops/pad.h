// Pad's begin and end amounts, resolved once for the shape rule, the CPU and
// CUDA kernels and the gradient rule (graph/ops/expand_tile_pad.cc).
#pragma once

#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

// [begin_0 .. begin_{rank-1}, end_0 .. end_{rank-1}] of a rank-`rank` input:
// the attribute before opset 11, else `pads` over `axes` (all dims when null).
Result<std::vector<int64_t>> pad_amounts(const Node& node, int64_t opset, int64_t rank, const Tensor* pads,
                                         const Tensor* axes);

}  // namespace ort_train
