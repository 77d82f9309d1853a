// Static shape and dtype inference over the whole graph, in topological order,
// using each op's registered shape rule. Values of initializers and Constant
// nodes flow through rules that can use them (Reshape's shape, Slice's starts),
// and rules like Shape produce values, so shape arithmetic exported by PyTorch
// (Shape -> Gather -> Concat -> Reshape) resolves when the input shapes are known.
#pragma once
#include <map>
#include <string>

#include "graph/graph.h"

namespace ort_train {

struct ShapeInferenceOptions {
  // Concrete sizes for symbolic dims ("batch" -> 8); applied to graph inputs first.
  std::map<std::string, int64_t> dim_values;
};

// Fills model.graph.values for every node output. Errors name the node.
Status infer_shapes(Model& model, const ShapeInferenceOptions& options = {});

// Every node whose op has no shape rule at its opset, listed together.
Status check_ops_known(const Model& model);

}  // namespace ort_train
