// ReverseSequence's view of its input, [d0, d1, inner] with the batch axis
// first or second, and its lengths checked: what the CPU and CUDA kernels share.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

struct ReverseSequenceView {
  bool batch_major = false;
  int64_t d0 = 0, d1 = 0, inner = 0;
  std::vector<int64_t> lens;
};

Result<ReverseSequenceView> reverse_sequence_view(const Node& node, const Dims& x, const Tensor& lens);

}  // namespace ort_train
