// A model's own functions (ModelProto.functions, FunctionProto) expanded at
// load: each call becomes the function's body, its formal inputs and outputs
// renamed to the call's values, its other values to "<call>/<name>", and its
// attribute references (ref_attr_name) replaced by the call's attributes or
// the function's defaults. Calls inside a body are expanded too, up to a
// depth that a recursive file cannot exceed. A body that holds subgraphs
// (If, Loop, Scan) is left as a call, refused later as an op without a kernel.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

struct FunctionDef {
  std::string domain, name;
  std::vector<std::string> inputs, outputs;
  std::vector<std::string> attributes;         // every attribute name, with or without a default
  std::vector<Attribute> attribute_defaults;   // attribute_proto: the defaults
  std::vector<Node> nodes;
  std::vector<OpsetImport> opset_imports;
};

// Expands every call in the top-level graph; returns how many calls it expanded.
Result<size_t> inline_functions(Model& model, const std::vector<FunctionDef>& functions);

}  // namespace ort_train
