// Hardmax's [outer, n, inner] view around its axis: from opset 13 the axis
// alone (default -1); before, the input seen as 2-D from the axis on (default
// 1), as Softmax was. The CPU and CUDA kernels both take it from here.
#pragma once
#include <array>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

Result<std::array<int64_t, 3>> hardmax_view(const Node& node, int64_t opset, const Dims& dims);

}  // namespace ort_train
