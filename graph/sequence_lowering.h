// Sequence values (opset 11+) as exporters use them inside a graph, lowered
// to tensor ops when the file is loaded, so every later stage (shape
// inference, autodiff, the executor) sees tensors only:
//   - SplitToSequence read only by SequenceAt at constant positions (the
//     dynamo exporter's torch.split / chunk, e.g. GPT-2's q, k, v): each
//     SequenceAt becomes a Slice of the chunk it names (and a Squeeze with
//     keepdims 0), whose gradient is SliceGrad's;
//   - SequenceConstruct read by SequenceAt at constant positions, by
//     ConcatFromSequence (Concat, or Unsqueeze and Concat with new_axis) and
//     by SequenceLength (a constant).
// A sequence used any other way (a graph input or output, a position known
// only at run time, a Loop carrying it) stays, and is refused by name as an
// op without a kernel.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

// Lowers what it can in the top-level graph; returns the sequence-producing nodes it removed.
Result<std::vector<std::string>> lower_sequences(Model& model);

}  // namespace ort_train
