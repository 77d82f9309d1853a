#include "graph/passes/pattern_match.h"

#include <algorithm>
#include <cmath>

#include "graph/op_schema.h"

namespace ort_train {

PatternMatcher::PatternMatcher(GraphIndex& index, const PassContext& ctx, int64_t opset)
    : index_(index), ctx_(ctx), protected_(protected_values(index.graph(), ctx)), opset_(opset) {}

const Node* PatternMatcher::producer(const std::string& value, const std::string& op_type, size_t min_inputs) const {
  auto p = index_.producer(value);
  if (!p || claimed_.count(*p)) return nullptr;
  const Node& n = index_.graph().nodes[*p];
  return n.op_type == op_type && n.domain.empty() && n.inputs.size() >= min_inputs ? &n : nullptr;
}

const Node* PatternMatcher::fused_producer(const std::string& value, const std::string& op_type,
                                           size_t min_inputs) const {
  auto p = index_.producer(value);
  if (!p || claimed_.count(*p)) return nullptr;
  const Node& n = index_.graph().nodes[*p];
  return n.op_type == op_type && n.domain == kOrtTrainDomain && n.inputs.size() >= min_inputs ? &n : nullptr;
}

const Node* PatternMatcher::sole_reader(const std::string& value, const std::string& op_type, size_t min_inputs) const {
  const auto& uses = index_.consumers(value);
  if (uses.size() != 1 || claimed_.count(uses[0].node) || index_.is_graph_output(value)) return nullptr;
  const Node& n = index_.graph().nodes[uses[0].node];
  return n.op_type == op_type && n.domain.empty() && n.inputs.size() >= min_inputs && !n.outputs.empty() ? &n : nullptr;
}

std::optional<double> PatternMatcher::scalar(const std::string& value) const {
  return scalar_of_type(value, false);
}

std::optional<bool> PatternMatcher::bool_scalar(const std::string& value) const {
  auto v = scalar_of_type(value, true);
  if (!v) return std::nullopt;
  return *v != 0.0;
}

std::optional<double> PatternMatcher::scalar_of_type(const std::string& value, bool boolean) const {
  const Graph& g = index_.graph();
  const Tensor* t = nullptr;
  auto init = g.initializers.find(value);
  if (init != g.initializers.end()) {
    if (protected_.count(value)) return std::nullopt;
    t = &init->second;
  } else if (auto p = index_.producer(value)) {
    const Node& n = g.nodes[*p];
    const Attribute* a = n.op_type == "Constant" && n.domain.empty() ? n.attr("value") : nullptr;
    if (a && a->type == Attribute::Type::kTensor) t = &a->t;
  }
  if (!t || t->numel() != 1 || t->dtype() == DType::kString || (t->dtype() == DType::kBool) != boolean)
    return std::nullopt;
  return boolean ? (t->data<bool>()[0] ? 1.0 : 0.0) : t->to_double_vector()[0];
}

bool PatternMatcher::is_scalar(const std::string& value, double want) const {
  auto v = scalar(value);
  return v && std::abs(*v - want) <= 1e-5 * std::max(1.0, std::abs(want));
}

std::optional<std::string> PatternMatcher::other_than_scalar(const Node& n, double want) const {
  if (n.inputs.size() != 2) return std::nullopt;
  if (is_scalar(n.inputs[1], want)) return n.inputs[0];
  if (is_scalar(n.inputs[0], want)) return n.inputs[1];
  return std::nullopt;
}

bool PatternMatcher::only_read_by(const std::string& value, const std::set<size_t>& nodes) const {
  if (index_.is_graph_output(value) || protected_.count(value)) return false;
  for (const GraphIndex::Use& u : index_.consumers(value))
    if (!nodes.count(u.node)) return false;
  return true;
}

bool PatternMatcher::closed(const std::set<size_t>& nodes, size_t last) const {
  for (size_t i : nodes)
    if (claimed_.count(i)) return false;
  for (size_t i : nodes) {
    if (i == last) continue;
    for (const std::string& o : index_.graph().nodes[i].outputs)
      if (!o.empty() && !only_read_by(o, nodes)) return false;
  }
  return true;
}

std::optional<DType> PatternMatcher::dtype(const std::string& value) const {
  const Graph& g = index_.graph();
  if (auto it = g.initializers.find(value); it != g.initializers.end()) return it->second.dtype();
  const ValueInfo* v = g.value(value);
  if (!v || v->dtype == DType::kUndefined) return std::nullopt;
  return v->dtype;
}

std::optional<size_t> PatternMatcher::rank(const std::string& value) const {
  OptShape s = shape(value);
  return s ? std::optional<size_t>(s->size()) : std::nullopt;
}

OptShape PatternMatcher::shape(const std::string& value) const {
  const Graph& g = index_.graph();
  if (auto it = g.initializers.find(value); it != g.initializers.end()) return shape_from_dims(it->second.dims());
  const ValueInfo* v = g.value(value);
  return v ? v->shape : std::nullopt;
}

Node fused_node(const GraphIndex& index, const Node& last, const std::string& op_type, std::vector<std::string> inputs,
                std::vector<Attribute> attributes) {
  size_t slash = last.name.rfind('/');
  std::string scope = slash == std::string::npos ? "" : last.name.substr(0, slash + 1);
  Node n;
  n.name = index.fresh_node_name(scope + op_type);
  n.op_type = op_type;
  n.domain = kOrtTrainDomain;
  n.inputs = std::move(inputs);
  n.outputs = {last.outputs[0]};
  n.attributes = std::move(attributes);
  return n;
}

bool replace_matches(Model& model, GraphIndex& index, const PassContext& ctx, std::vector<FusedMatch> matches) {
  if (matches.empty()) return false;
  if (model.opset(kOrtTrainDomain) == 0) model.opset_imports.push_back({kOrtTrainDomain, 1});
  Graph& g = index.graph();
  std::vector<size_t> removed;
  std::set<std::string> names;  // fused_node_name is unique in the graph, not among the matches
  for (FusedMatch& m : matches) {
    std::string base = m.fused.name;
    for (int k = 2; !names.insert(m.fused.name).second; ++k) m.fused.name = base + "_" + std::to_string(k);
    g.nodes[m.last] = std::move(m.fused);
    for (size_t i : m.nodes)
      if (i != m.last) removed.push_back(i);
  }
  index.rebuild();
  index.remove_nodes(removed);
  ctx.count(static_cast<int64_t>(removed.size()));
  return true;
}

std::optional<std::vector<int64_t>> reduce_mean_axes(const Graph& g, const Node& n) {
  if (n.attr_int("keepdims", 1) != 1) return std::nullopt;
  if (n.attr("axes")) return n.attr_ints("axes");
  if (!n.has_input(1)) return std::nullopt;
  auto it = g.initializers.find(n.inputs[1]);
  if (it == g.initializers.end() || it->second.dtype() != DType::kInt64) return std::nullopt;
  const int64_t* p = it->second.data<int64_t>();
  return std::vector<int64_t>(p, p + it->second.numel());
}

std::optional<int64_t> suffix_axis(std::vector<int64_t> axes, std::optional<size_t> rank) {
  if (axes.empty()) return std::nullopt;
  bool negative = std::all_of(axes.begin(), axes.end(), [](int64_t a) { return a < 0; });
  if (!negative) {
    if (!rank) return std::nullopt;
    for (int64_t& a : axes) {
      if (a < 0) a += static_cast<int64_t>(*rank);
      a -= static_cast<int64_t>(*rank);  // as negative axes
    }
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != -static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i)) return std::nullopt;
  return axes.front();
}

Result<bool> FusionPass::apply(Model& model, const PassContext& ctx) {
  GraphIndex& index = ctx.index(model.graph);
  PatternMatcher pm(index, ctx, model.opset(""));
  std::vector<FusedMatch> matches;
  for (const Node& n : model.graph.nodes)
    if (auto m = n.outputs.empty() ? std::nullopt : match(n, pm)) {
      pm.claim(m->nodes);
      matches.push_back(std::move(*m));
    }
  return replace_matches(model, index, ctx, std::move(matches));
}

}  // namespace ort_train
