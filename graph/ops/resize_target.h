// What a Resize node resizes to, from its scales or sizes input and its
// attributes, shared by the shape rule and the kernels: per dim, the scale
// the coordinate transform divides by and the output size.
//   - axes (opset 18): scales/sizes name these dims only; the others keep
//     their size at scale 1;
//   - keep_aspect_ratio_policy (opset 18) with sizes: stretch (each dim its
//     own size), not_larger or not_smaller (one scale for every named dim,
//     the smallest or largest of sizes/input; sizes round(scale * input));
//   - scales alone: floor(input * scale).
#pragma once
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

struct ResizeTarget {
  std::vector<double> scales;  // per dim
  std::vector<int64_t> sizes;  // per dim; -1 where the input's size is unknown
};

// The dims scales/sizes (and roi) name: `axes` (negative counting from the end), or all.
Result<std::vector<size_t>> resize_axes(const Node& node, size_t rank);

// `in` holds the input's dims, -1 where unknown. `scales` or `sizes` (either
// may be null or empty) are the node's inputs; an error names the node.
Result<ResizeTarget> resize_target(const Node& node, const std::vector<int64_t>& in, const Tensor* scales,
                                   const Tensor* sizes);

}  // namespace ort_train
