// Partial values of shape tensors: an int64 tensor of rank 0 or 1 that
// holds sizes (Shape(x) and what exporters compute from it: Gather of one
// element, Unsqueeze, Concat with constants, Slice, Squeeze, Cast, a Reshape
// to one dim, and the Where(Equal(t, -1), 1, t) torch.onnx writes around an
// expand's target, a 0/1 list standing for Equal's booleans), known
// element by element as Dims: a number, a symbol such as `batch`, or
// unknown. Shape inference carries them beside the values it knows fully, so
// that Reshape(x, Concat(Shape(x)[0], Shape(x)[1], 12, 64)) gets the shape
// [batch, seq, 12, 64] rather than four unknown dims (ONNX's "data
// propagation"). Only these few ops are followed; anything else ends the
// chain.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "graph/graph.h"
#include "graph/shape.h"
#include "graph/tensor.h"

namespace ort_train {

struct DimValues {
  Shape elements;
  bool scalar = false;  // a rank-0 tensor (one element)
  // Where a constant -1 sits (Reshape's "the rest"); that element itself is unknown.
  std::optional<size_t> minus_one;
};

// What shape inference knows of a node's inputs.
struct DimValueInputs {
  const std::map<std::string, DimValues>& dim_values;  // partial values so far
  const std::map<std::string, Tensor>& constants;      // fully known values
  const Graph& graph;                                  // inferred shapes (graph.values)
};

// The partial value of output 0 of `n`, when it is one of the ops above and its inputs' values are known enough.
std::optional<DimValues> propagate_dim_values(const Node& n, int64_t opset, const DimValueInputs& in);

// A fully known value as partial values (int64/int32 of rank <= 1), else none.
std::optional<DimValues> dim_values_of_constant(const Tensor& t);

}  // namespace ort_train
