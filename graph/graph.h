// The IR: a Model owns one Graph of Nodes connected by value names, with
// initializer values, typed graph inputs/outputs, and the (dtype, shape) of every
// value that inference could determine. Forward, loss and backward nodes all live
// in this same structure, so every pass, the planner and the executor serve both.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/attribute.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train {

struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  OptShape shape;
  std::string doc_string;
  // Serialized TypeProto of a non-tensor value (sequence, optional, map): kept so
  // the model round-trips; the executor refuses to run such a value.
  std::string non_tensor_type;
  // The file's metadata_props on this value, kept for the round trip; the
  // dynamo exporter's say what an initializer was in PyTorch (graph/onnx_metadata.h).
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" is the default ONNX domain ("ai.onnx" is normalized to "")
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::vector<Attribute> attributes;  // in file order, for a faithful round trip
  std::string doc_string;
  // The file's metadata_props on this node (the dynamo exporter's: the FX
  // node it came from, its module), kept for the round trip, less the
  // exporter's stack traces.
  std::vector<std::pair<std::string, std::string>> metadata;

  const Attribute* attr(const std::string& n) const {
    for (const Attribute& a : attributes)
      if (a.name == n) return &a;
    return nullptr;
  }
  int64_t attr_int(const std::string& n, int64_t def) const {
    const Attribute* a = attr(n);
    return a ? a->i : def;
  }
  float attr_float(const std::string& n, float def) const {
    const Attribute* a = attr(n);
    return a ? a->f : def;
  }
  std::string attr_string(const std::string& n, const std::string& def) const {
    const Attribute* a = attr(n);
    return a ? a->s : def;
  }
  std::vector<int64_t> attr_ints(const std::string& n, std::vector<int64_t> def = {}) const {
    const Attribute* a = attr(n);
    return a ? a->ints : def;
  }
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  // "name (Op)" for messages.
  std::string describe() const;
};

struct Graph {
  std::string name;
  std::string doc_string;
  // The file's metadata_props on the graph (the dynamo exporter's graph
  // signature: every parameter, buffer and constant PyTorch lifted).
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;    // graph inputs (initializers excluded unless listed by the file)
  std::vector<ValueInfo> outputs;
  std::map<std::string, Tensor> initializers;
  std::vector<std::string> initializer_order;  // file order, for saving
  // Inferred or declared type of every value (inputs, outputs, intermediates).
  std::unordered_map<std::string, ValueInfo> values;
  // value_info entries that were present in the file (kept for round trip).
  std::vector<std::string> declared_value_infos;

  const ValueInfo* value(const std::string& n) const {
    auto it = values.find(n);
    return it == values.end() ? nullptr : &it->second;
  }
  bool is_initializer(const std::string& n) const { return initializers.count(n) > 0; }
  // Inputs that are not backed by an initializer: what a caller must feed.
  std::vector<const ValueInfo*> required_inputs() const;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
};

struct Model {
  int64_t ir_version = 8;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<OpsetImport> opset_imports;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  // Model-local functions are kept serialized: they round-trip but are not expanded.
  std::vector<std::string> opaque_functions;
  Graph graph;

  // Opset version the model imports for a domain ("" = default ONNX domain), 0 if none.
  int64_t opset(const std::string& domain) const;
};

}  // namespace ort_train
