#pragma once
#include "graph/graph.h"

namespace ort_train {

// Orders g.nodes so every node follows the producers of its inputs, keeping the
// file order among independent nodes (ONNX Runtime's test models are unsorted).
// Fails on a cycle or on an input nothing produces, naming the node and value.
Status topological_sort(Graph& g);

}  // namespace ort_train
