// A node's inputs and outputs against its ONNX schema (onnx's own
// OpSchemaRegistry): a required input left empty, too few inputs, or no
// output at all is refused as the model loads, naming the node, before any
// shape rule or kernel indexes what is not there.
#pragma once
#include <cstdint>

#include "graph/graph.h"

namespace ort_train {

// Only default-domain ops ort_train runs are checked; ops without a schema in
// the installed onnx (newer opsets) pass. Extra inputs are not refused.
Status check_node_arity(const Node& node, int64_t opset);

}  // namespace ort_train
