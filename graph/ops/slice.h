// Slice's resolved parameters, shared by its shape rule and its kernel.
#pragma once
#include <optional>
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

// resolve_slice over the node's own arguments: its starts/ends/axes
// attributes when `from_attributes` (Slice before opset 10, a SliceGrad made
// from one), else inputs first_input.. (starts, ends[, axes, steps]), each
// read by `ints(i)`: Result<std::optional<std::vector<int64_t>>>, nullopt
// for an omitted input. One reading of the arguments for Slice's and
// SliceGrad's rules and kernels on every device.
template <typename Ints>
Result<std::vector<SliceAxis>> resolve_node_slice(const Node& node, const Dims& dims, bool from_attributes,
                                                  size_t first_input, Ints&& ints) {
  std::vector<int64_t> args[4];  // starts, ends, axes, steps
  if (from_attributes) {
    args[0] = node.attr_ints("starts");
    args[1] = node.attr_ints("ends");
    args[2] = node.attr_ints("axes");
  } else {
    for (size_t k = 0; k < 4; ++k) {
      ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> v, ints(first_input + k));
      if (v) args[k] = std::move(*v);
    }
  }
  return resolve_slice(node, dims, args[0], args[1], std::move(args[2]), std::move(args[3]));
}

}  // namespace ort_train
