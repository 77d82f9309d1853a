// Compress's view of its input, [outer, n, inner] around the axis (the
// flattened input without one), and the positions its condition keeps:
// what the CPU and CUDA kernels share.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

struct CompressView {
  int64_t outer = 1, n = 0, inner = 1;
  std::vector<int64_t> keep;  // positions along n, in order
};

Result<CompressView> compress_view(const Node& node, const Dims& x, const Tensor& condition);

}  // namespace ort_train
