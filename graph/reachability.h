// Which nodes a set of values depends on, found by walking producers back
// from those values. The forward (evaluation) part of a training graph is the
// nodes its loss and model outputs need, wherever passes have put them, not a
// prefix of the node list.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

// Indices, ascending, of the nodes that `values` depend on (directly or not).
std::vector<size_t> nodes_reaching(const Graph& g, const std::vector<std::string>& values);

// The model cut down to what `outputs` need: those nodes in their order, the
// same initializers and inputs, and `outputs` as its graph outputs.
Result<Model> extract_subgraph(const Model& m, const std::vector<std::string>& outputs);

}  // namespace ort_train
