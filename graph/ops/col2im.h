// Col2Im (opset 18) and its gradient op com.ort_train Im2Col share one map:
// column element (k, l) of a [N, C * K, L] input, K = prod(block_shape),
// lands on one pixel of the [N, C, image_shape...] image, or in the padding.
// k runs over the block, l over the block positions, both row-major:
//   pixel_d = grid_d(l) * stride_d - pad_begin_d + block_d(k) * dilation_d.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

struct Col2ImGeometry {
  Dims image;       // the spatial dims of the image
  Dims block;       // block_shape
  Dims grid;        // block positions along each spatial dim
  Dims strides, dilations, pads_begin;
  int64_t block_size = 1;  // K
  int64_t columns = 1;     // L
  int64_t pixels = 1;      // prod(image)
};

// Checks the attributes against the image and block dims (positive sizes and
// strides, 2 * D pads, a block that fits the padded image).
Result<Col2ImGeometry> col2im_geometry(const Node& node, const Dims& image, const Dims& block);

// For each column element k * L + l, the flat pixel it lands on, or -1 in the padding.
std::vector<int64_t> col2im_pixel_map(const Col2ImGeometry& g);

}  // namespace ort_train
