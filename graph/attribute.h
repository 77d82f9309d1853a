// A node attribute, typed as in ONNX's AttributeProto. Subgraphs (If's
// branches, Loop's and Scan's bodies) are parsed into Graphs, shared between
// copies of the node and never changed once loaded (a pass that needs another
// body makes a new Graph). Sparse tensors and type protos are kept as their
// serialized proto so a round trip preserves them even though no kernel reads them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace ort_train {

struct Graph;

struct Attribute {
  // Values follow onnx.AttributeProto.AttributeType.
  enum class Type : int32_t {
    kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5,
    kFloats = 6, kInts = 7, kStrings = 8, kTensors = 9, kGraphs = 10,
    kSparseTensor = 11, kSparseTensors = 12, kTypeProto = 13, kTypeProtos = 14,
  };
  std::string name;
  Type type = Type::kUndefined;
  float f = 0.f;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::shared_ptr<const Graph> g;                   // kGraph
  std::vector<std::shared_ptr<const Graph>> graphs; // kGraphs
  std::string ref_attr_name;    // set inside function bodies
  std::string opaque_proto;     // serialized AttributeProto for types kept but not interpreted
  std::string doc_string;

  static Attribute make_int(std::string name, int64_t v) {
    Attribute a; a.name = std::move(name); a.type = Type::kInt; a.i = v; return a;
  }
  static Attribute make_float(std::string name, float v) {
    Attribute a; a.name = std::move(name); a.type = Type::kFloat; a.f = v; return a;
  }
  static Attribute make_ints(std::string name, std::vector<int64_t> v) {
    Attribute a; a.name = std::move(name); a.type = Type::kInts; a.ints = std::move(v); return a;
  }
  static Attribute make_string(std::string name, std::string v) {
    Attribute a; a.name = std::move(name); a.type = Type::kString; a.s = std::move(v); return a;
  }
  static Attribute make_graph(std::string name, std::shared_ptr<const Graph> v) {
    Attribute a; a.name = std::move(name); a.type = Type::kGraph; a.g = std::move(v); return a;
  }
  static Attribute make_tensor(std::string name, Tensor v) {
    Attribute a; a.name = std::move(name); a.type = Type::kTensor; a.t = std::move(v); return a;
  }
};

}  // namespace ort_train
