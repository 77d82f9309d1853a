// state_outputs: each output an op declares as the next value of one of its
// inputs (BatchNormalization's running mean and variance in training mode,
// ORT_REGISTER_STATEFUL_OP) becomes a graph output when that input is an
// initializer, so the step computes it and the trainer can store it back.
// Run by the step-graph builder (training/step_graph.h), not by default: an
// inference graph has no state to write back.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

// The graph's state outputs and the initializers they are the next values
// of ({output, initializer}, in node order): those the pass made graph outputs.
std::vector<std::pair<std::string, std::string>> state_writebacks(const Graph& graph);

}  // namespace ort_train
