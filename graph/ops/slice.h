// Slice's resolved parameters, shared by its shape rule and its kernel.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// For every dim of `dims`: first index, step and element count after clamping per
// the ONNX spec. `starts/ends/axes/steps` come from inputs (opset 10+) or attributes.
Result<std::vector<SliceAxis>> resolve_slice(const Node& node, const Dims& dims, const std::vector<int64_t>& starts,
                                             const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                                             std::vector<int64_t> steps);

}  // namespace ort_train
