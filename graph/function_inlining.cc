#include "graph/function_inlining.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace ort_train {
namespace {

constexpr int kMaxDepth = 16;

const FunctionDef* find(const std::vector<FunctionDef>& functions, const Node& n) {
  for (const FunctionDef& f : functions)
    if (f.domain == n.domain && f.name == n.op_type) return &f;
  return nullptr;
}

bool has_subgraph(const FunctionDef& f) {
  for (const Node& n : f.nodes)
    for (const Attribute& a : n.attributes)
      if (a.type == Attribute::Type::kGraph || a.type == Attribute::Type::kGraphs) return true;
  return false;
}

// The body of `f` for the call `call`.
Result<std::vector<Node>> expand(const FunctionDef& f, const Node& call) {
  if (call.inputs.size() > f.inputs.size() || call.outputs.size() > f.outputs.size())
    return invalid_argument("{}: {} input(s) and {} output(s) for function {}.{} of {} and {}", call.describe(),
                            call.inputs.size(), call.outputs.size(), f.domain, f.name, f.inputs.size(),
                            f.outputs.size());
  std::map<std::string, std::string> rename;
  for (size_t i = 0; i < f.inputs.size(); ++i) rename[f.inputs[i]] = i < call.inputs.size() ? call.inputs[i] : "";
  for (size_t i = 0; i < f.outputs.size(); ++i)
    rename[f.outputs[i]] = i < call.outputs.size() && !call.outputs[i].empty() ? call.outputs[i]
                                                                                : call.name + "/" + f.outputs[i];
  auto renamed = [&](const std::string& v) {
    if (v.empty()) return v;
    auto it = rename.find(v);
    return it != rename.end() ? it->second : call.name + "/" + v;
  };
  std::vector<Node> body;
  for (const Node& b : f.nodes) {
    Node n = b;
    n.name = call.name + "/" + b.name;
    for (std::string& v : n.inputs) v = renamed(v);
    for (std::string& v : n.outputs) v = renamed(v);
    std::vector<Attribute> attrs;
    for (const Attribute& a : b.attributes) {
      if (a.ref_attr_name.empty()) {
        attrs.push_back(a);
        continue;
      }
      const Attribute* given = call.attr(a.ref_attr_name);
      if (!given)
        for (const Attribute& d : f.attribute_defaults)
          if (d.name == a.ref_attr_name) given = &d;
      if (!given) continue;  // neither given nor defaulted: the attribute is absent, as ONNX says
      Attribute value = *given;
      value.name = a.name;
      value.ref_attr_name.clear();
      attrs.push_back(std::move(value));
    }
    n.attributes = std::move(attrs);
    n.metadata = call.metadata;  // the call's record of where it came from
    body.push_back(std::move(n));
  }
  return body;
}

}  // namespace

Result<size_t> inline_functions(Model& model, const std::vector<FunctionDef>& functions) {
  size_t expanded = 0;
  std::vector<Node>& nodes = model.graph.nodes;
  // A body's own calls are expanded on the next round; depth bounds a recursive file.
  for (int depth = 0;; ++depth) {
    bool changed = false;
    std::vector<Node> out;
    out.reserve(nodes.size());
    for (Node& n : nodes) {
      const FunctionDef* f = find(functions, n);
      if (!f || has_subgraph(*f)) {
        out.push_back(std::move(n));
        continue;
      }
      if (depth >= kMaxDepth)
        return invalid_argument("{}: functions call each other more than {} deep", n.describe(), kMaxDepth);
      ASSIGN_OR_RETURN(std::vector<Node> body, expand(*f, n));
      for (const OpsetImport& o : f->opset_imports)
        if (model.opset(o.domain) == 0) model.opset_imports.push_back(o);
      out.insert(out.end(), std::make_move_iterator(body.begin()), std::make_move_iterator(body.end()));
      ++expanded;
      changed = true;
    }
    nodes = std::move(out);
    if (!changed) return expanded;
  }
}

}  // namespace ort_train
