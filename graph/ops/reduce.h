// Which axes a Reduce* node reduces: from the `axes` attribute before the opset
// where axes became an input (ReduceSum 13, the others 18), else the input.
#pragma once
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

struct ReduceAxes {
  std::vector<bool> reduced;  // per input dim
  bool keepdims = true;
  bool noop = false;  // empty axes with noop_with_empty_axes: output = input
};

// `axes_input` is the value of input 1 when present (nullptr when absent).
Result<ReduceAxes> resolve_reduce_axes(const Node& node, int64_t opset, int64_t rank, const Tensor* axes_input,
                                       bool axes_input_present);

// The dims of x that SumTo(x) -> `target` sums over: x's extra leading dims
// and those where the target has 1 and x does not.
std::vector<bool> sum_to_axes(const Dims& x, const Dims& target);

}  // namespace ort_train
