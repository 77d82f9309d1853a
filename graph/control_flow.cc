#include "graph/control_flow.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graph/op_schema.h"
#include "graph/topo_sort.h"

namespace ort_train {

namespace {

bool is_control_flow_type(const std::string& op) { return op == "If" || op == "Loop" || op == "Scan"; }

std::vector<std::string> subgraph_names(const Node& n) {
  if (n.op_type == "If") return {"then_branch", "else_branch"};
  return {"body"};
}

// Renames every read of `from` in g to `to` (node inputs and graph outputs);
// false when `to` is defined in g, where the rename would change what it reads.
bool rename_reads(Graph& g, const std::string& from, const std::string& to) {
  if (g.is_initializer(to)) return false;
  for (const ValueInfo& v : g.inputs)
    if (v.name == to) return false;
  for (const Node& n : g.nodes)
    if (std::find(n.outputs.begin(), n.outputs.end(), to) != n.outputs.end()) return false;
  for (Node& n : g.nodes)
    for (std::string& in : n.inputs)
      if (in == from) in = to;
  for (ValueInfo& o : g.outputs)
    if (o.name == from) o.name = to;
  return true;
}

}  // namespace

bool is_control_flow(const Node& n) { return n.domain == kOrtTrainDomain && is_control_flow_type(n.op_type); }

bool is_onnx_control_flow(const Node& n) { return n.domain.empty() && is_control_flow_type(n.op_type); }

int64_t& max_loop_trips() {
  static int64_t trips = int64_t{1} << 24;
  return trips;
}

int64_t& max_loop_elements() {
  static int64_t elements = int64_t{1} << 34;
  return elements;
}

int64_t& max_loop_work() {
  static int64_t work = int64_t{1} << 39;
  return work;
}

int64_t num_captures(const Node& n) {
  // A file may hold the explicit form too, with any number here: never more
  // captures than inputs, never fewer than none.
  return std::clamp<int64_t>(n.attr_int("num_captures", 0), 0, static_cast<int64_t>(n.inputs.size()));
}

int64_t subgraph_opset(const Node& n) { return n.attr_int("onnx_opset", 0); }

std::shared_ptr<const Graph> subgraph(const Node& n, const std::string& name) {
  const Attribute* a = n.attr(name);
  return a && a->type == Attribute::Type::kGraph ? a->g : nullptr;
}

std::vector<std::string> free_values(const Graph& g) {
  std::unordered_set<std::string> defined;
  for (const ValueInfo& v : g.inputs) defined.insert(v.name);
  for (const auto& [name, t] : g.initializers) defined.insert(name);
  for (const Node& n : g.nodes)
    for (const std::string& o : n.outputs)
      if (!o.empty()) defined.insert(o);
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const Node& n : g.nodes)
    for (const std::string& in : n.inputs) read(in);
  for (const ValueInfo& o : g.outputs) read(o.name);
  return out;
}

Status make_captures_explicit(Node& n, int64_t onnx_opset) {
  std::vector<std::string> names = subgraph_names(n);
  std::vector<std::shared_ptr<const Graph>> graphs;
  for (const std::string& name : names) {
    std::shared_ptr<const Graph> g = subgraph(n, name);
    if (!g) return invalid_argument("{}: attribute '{}' must be a graph", n.describe(), name);
    graphs.push_back(std::move(g));
  }
  // The formal inputs each subgraph must have: If's branches none, Loop's
  // body one per node input, Scan's body one per node input (before opset 9
  // all but the first, sequence_lens).
  const bool scan8 = n.op_type == "Scan" && onnx_opset < 9;
  const size_t formal = n.op_type == "If" ? 0 : scan8 && !n.inputs.empty() ? n.inputs.size() - 1 : n.inputs.size();
  for (size_t k = 0; k < graphs.size(); ++k)
    if (graphs[k]->inputs.size() != formal)
      return invalid_argument("{}: '{}' has {} inputs; the node gives it {}", n.describe(), names[k],
                              graphs[k]->inputs.size(), formal);
  std::vector<std::string> captures;
  std::set<std::string> seen;
  for (const auto& g : graphs)
    for (const std::string& v : free_values(*g))
      if (seen.insert(v).second) captures.push_back(v);
  for (size_t k = 0; k < graphs.size(); ++k) {
    auto g = std::make_shared<Graph>(*graphs[k]);
    for (const std::string& c : captures) {
      ValueInfo v;
      v.name = c;
      g->inputs.push_back(v);
      g->values[c] = v;
    }
    Status st = topological_sort(*g);
    if (!st.ok()) return st.with_context(n.describe() + " '" + names[k] + "'");
    for (Attribute& a : n.attributes)
      if (a.name == names[k]) a.g = std::move(g);
  }
  n.inputs.insert(n.inputs.end(), captures.begin(), captures.end());
  n.domain = kOrtTrainDomain;
  n.attributes.push_back(Attribute::make_int("num_captures", static_cast<int64_t>(captures.size())));
  n.attributes.push_back(Attribute::make_int("onnx_opset", onnx_opset));
  return Status::Ok();
}

Node with_implicit_captures(const Node& n) {
  Node out = n;
  out.domain.clear();
  std::erase_if(out.attributes, [](const Attribute& a) { return a.name == "num_captures" || a.name == "onnx_opset"; });
  const size_t c = static_cast<size_t>(num_captures(n));
  const size_t base = n.inputs.size() - c;
  out.inputs.resize(base);
  for (Attribute& a : out.attributes) {
    if (a.type != Attribute::Type::kGraph || !a.g) continue;
    auto g = std::make_shared<Graph>(*a.g);
    if (g->inputs.size() < c) continue;  // not this node's form: written as it is
    const size_t formal_base = g->inputs.size() - c;
    std::vector<ValueInfo> formals(g->inputs.begin() + static_cast<std::ptrdiff_t>(formal_base), g->inputs.end());
    g->inputs.resize(formal_base);
    std::vector<Node> binds;
    for (size_t k = 0; k < c; ++k) {
      const std::string& formal = formals[k].name;
      const std::string& outer = n.inputs[base + k];
      if (formal == outer || rename_reads(*g, formal, outer)) continue;
      Node id;
      id.name = "capture_" + formal;
      id.op_type = "Identity";
      id.inputs = {outer};
      id.outputs = {formal};
      binds.push_back(std::move(id));
    }
    g->nodes.insert(g->nodes.begin(), binds.begin(), binds.end());
    a.g = std::move(g);
  }
  return out;
}

std::shared_ptr<const Graph> with_prefixed_names(const Graph& g, const std::string& prefix) {
  std::unordered_map<std::string, std::string> to;
  auto define = [&](const std::string& name) {
    if (!name.empty()) to.emplace(name, prefix + name);
  };
  for (const ValueInfo& v : g.inputs) define(v.name);
  for (const auto& [name, t] : g.initializers) define(name);
  for (const Node& n : g.nodes)
    for (const std::string& o : n.outputs) define(o);
  auto renamed = [&](const std::string& name) {
    auto it = to.find(name);
    return it == to.end() ? name : it->second;
  };
  auto out = std::make_shared<Graph>();
  out->name = g.name;
  out->doc_string = g.doc_string;
  for (ValueInfo v : g.inputs) {
    v.name = renamed(v.name);
    out->inputs.push_back(std::move(v));
  }
  for (ValueInfo v : g.outputs) {
    v.name = renamed(v.name);
    out->outputs.push_back(std::move(v));
  }
  for (const auto& [name, t] : g.initializers) out->initializers[renamed(name)] = t;
  for (const std::string& name : g.initializer_order) out->initializer_order.push_back(renamed(name));
  for (const auto& [name, v] : g.values) {
    ValueInfo copy = v;
    copy.name = renamed(name);
    out->values[copy.name] = std::move(copy);
  }
  for (const std::string& name : g.declared_value_infos) out->declared_value_infos.push_back(renamed(name));
  for (const Node& n : g.nodes) {
    Node copy = n;
    copy.name = prefix + n.name;
    for (std::string& in : copy.inputs) in = renamed(in);
    for (std::string& o : copy.outputs) o = renamed(o);
    for (Attribute& a : copy.attributes) {
      if (a.g) a.g = with_prefixed_names(*a.g, prefix);
      for (auto& sub : a.graphs) sub = with_prefixed_names(*sub, prefix);
    }
    out->nodes.push_back(std::move(copy));
  }
  return out;
}

Model subgraph_model(const Graph& g, int64_t onnx_opset, const std::vector<ValueInfo>& input_types) {
  Model m;
  m.opset_imports = {{"", onnx_opset}, {kOrtTrainDomain, 1}};
  m.graph = g;
  for (size_t i = 0; i < input_types.size() && i < m.graph.inputs.size(); ++i) {
    ValueInfo& v = m.graph.inputs[i];
    if (input_types[i].dtype != DType::kUndefined) v.dtype = input_types[i].dtype;
    v.shape = input_types[i].shape;
    m.graph.values[v.name] = v;
  }
  return m;
}

}  // namespace ort_train
