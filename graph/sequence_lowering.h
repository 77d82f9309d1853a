// Sequence values (opset 11+) as exporters use them inside a graph, lowered
// to tensor ops when the file is loaded, so every later stage (shape
// inference, autodiff, the executor) sees tensors only. A sequence whose
// tensors the file fixes is followed through SequenceEmpty,
// SequenceConstruct, SequenceInsert and SequenceErase at constant positions,
// Identity, and SplitToSequence into chunks of known sizes (Slices: the
// dynamo exporter's torch.split, e.g. GPT-2's q, k, v); its readers become
// tensor ops: SequenceAt an Identity, ConcatFromSequence a Concat (with
// Unsqueezes for new_axis), SequenceLength a constant. SplitToSequence into
// chunks of a size the file does not fix is lowered when only SequenceAt at
// constant positions reads it. A sequence used any other way (a graph input
// or output, a position known only at run time, a Loop carrying it) is
// given back as one SequenceConstruct of its tensors, and refused by name as
// an op without a kernel.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

// Lowers what it can in the top-level graph; returns the sequence-producing nodes it removed.
Result<std::vector<std::string>> lower_sequences(Model& model);

}  // namespace ort_train
