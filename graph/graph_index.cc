#include "graph/graph_index.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <string_view>
#include <unordered_set>

namespace ort_train {

GraphIndex::GraphIndex(Graph& graph) : graph_(graph) { rebuild(); }

namespace {
std::atomic<int64_t> g_builds{0};
}  // namespace

int64_t GraphIndex::builds() { return g_builds.load(); }

void GraphIndex::rebuild() {
  ++g_builds;
  producer_.clear();
  consumers_.clear();
  producer_.reserve(graph_.nodes.size() + graph_.nodes.size() / 4);  // no rehash while it fills
  consumers_.reserve(graph_.nodes.size() + graph_.nodes.size() / 4);
  graph_inputs_.clear();
  graph_outputs_.clear();
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Node& n = graph_.nodes[i];
    for (size_t s = 0; s < n.inputs.size(); ++s)
      if (!n.inputs[s].empty()) consumers_[n.inputs[s]].push_back({i, s});
    for (const std::string& o : n.outputs)
      if (!o.empty()) producer_[o] = i;
  }
  for (const ValueInfo& v : graph_.inputs) graph_inputs_.insert(v.name);
  for (const ValueInfo& v : graph_.outputs) graph_outputs_.insert(v.name);
}

std::optional<size_t> GraphIndex::producer(const std::string& value) const {
  auto it = producer_.find(value);
  if (it == producer_.end()) return std::nullopt;
  return it->second;
}

const std::vector<GraphIndex::Use>& GraphIndex::consumers(const std::string& value) const {
  static const std::vector<Use> kNone;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? kNone : it->second;
}

bool GraphIndex::value_exists(const std::string& name) const {
  return producer_.count(name) || consumers_.count(name) || graph_inputs_.count(name) ||
         graph_outputs_.count(name) || graph_.is_initializer(name) || graph_.values.count(name);
}

std::string GraphIndex::fresh_value_name(const std::string& base) const {
  if (!value_exists(base)) return base;
  for (size_t k = 1;; ++k) {
    std::string candidate = base + "_" + std::to_string(k);
    if (!value_exists(candidate)) return candidate;
  }
}

std::string GraphIndex::fresh_node_name(const std::string& base) const {
  std::unordered_set<std::string> taken;
  for (const Node& n : graph_.nodes) taken.insert(n.name);
  if (!taken.count(base)) return base;
  for (size_t k = 1;; ++k) {
    std::string candidate = base + "_" + std::to_string(k);
    if (!taken.count(candidate)) return candidate;
  }
}

Status GraphIndex::replace_all_uses(const std::string& from, const std::string& to) {
  if (from.empty() || to.empty()) return invalid_argument("replace_all_uses: empty value name");
  if (from == to) return Status::Ok();
  std::optional<size_t> to_producer = producer(to);
  if (!to_producer && !graph_.is_initializer(to) && !is_graph_input(to))
    return invalid_argument("cannot replace '{}' by '{}': nothing produces '{}'", from, to, to);
  std::vector<Use> uses = consumers(from);
  for (const Use& u : uses)
    if (to_producer && *to_producer >= u.node)
      return invalid_argument("cannot replace '{}' by '{}': {} reads it before '{}' is produced", from, to,
                              graph_.nodes[u.node].describe(), to);
  for (const Use& u : uses) graph_.nodes[u.node].inputs[u.slot] = to;
  consumers_.erase(from);
  if (!uses.empty()) {
    std::vector<Use>& to_uses = consumers_[to];
    to_uses.insert(to_uses.end(), uses.begin(), uses.end());
    std::sort(to_uses.begin(), to_uses.end(),
              [](const Use& a, const Use& b) { return a.node != b.node ? a.node < b.node : a.slot < b.slot; });
  }

  std::optional<size_t> from_producer = producer(from);
  if (!is_graph_output(from) || !from_producer) return Status::Ok();
  // The output keeps its name: its old producer now writes a dead value, and
  // an appended Identity provides the output from `to`.
  std::string dead = fresh_value_name(from + "_replaced");
  for (std::string& o : graph_.nodes[*from_producer].outputs)
    if (o == from) o = dead;
  producer_[dead] = *from_producer;
  if (const ValueInfo* info = graph_.value(from)) {
    ValueInfo copy = *info;
    copy.name = dead;
    graph_.values[dead] = std::move(copy);
  }
  Node identity;
  identity.name = fresh_node_name(from + "_identity");
  identity.op_type = "Identity";
  identity.inputs = {to};
  identity.outputs = {from};
  size_t at = graph_.nodes.size();
  graph_.nodes.push_back(std::move(identity));
  producer_[from] = at;
  consumers_[to].push_back({at, 0});
  return Status::Ok();
}

void erase_nodes(Graph& graph, const std::vector<size_t>& positions) {
  if (positions.empty()) return;
  std::vector<bool> remove(graph.nodes.size(), false);
  for (size_t p : positions)
    if (p < remove.size()) remove[p] = true;
  size_t kept = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (remove[i]) continue;
    if (kept != i) graph.nodes[kept] = std::move(graph.nodes[i]);
    ++kept;
  }
  graph.nodes.resize(kept);
}

void GraphIndex::remove_nodes(const std::vector<size_t>& positions) {
  if (positions.empty()) return;
  erase_nodes(graph_, positions);
  rebuild();
}

Status GraphIndex::insert_node(size_t position, Node node) {
  if (position > graph_.nodes.size())
    return invalid_argument("cannot insert {} at position {}: the graph has {} nodes", node.describe(), position,
                            graph_.nodes.size());
  for (const std::string& in : node.inputs) {
    if (in.empty() || graph_.is_initializer(in) || is_graph_input(in)) continue;
    std::optional<size_t> p = producer(in);
    if (!p) return invalid_argument("cannot insert {}: nothing produces its input '{}'", node.describe(), in);
    if (*p >= position)
      return invalid_argument("cannot insert {} at position {}: its input '{}' is produced later, by {}",
                              node.describe(), position, in, graph_.nodes[*p].describe());
  }
  for (const std::string& out : node.outputs) {
    if (out.empty()) continue;
    if (producer(out) || graph_.is_initializer(out) || is_graph_input(out))
      return invalid_argument("cannot insert {}: its output '{}' already exists", node.describe(), out);
    for (const Use& u : consumers(out))
      if (u.node < position)
        return invalid_argument("cannot insert {} at position {}: {} reads its output '{}' earlier",
                                node.describe(), position, graph_.nodes[u.node].describe(), out);
  }
  graph_.nodes.insert(graph_.nodes.begin() + static_cast<std::ptrdiff_t>(position), std::move(node));
  rebuild();
  return Status::Ok();
}

Status verify_graph(const Graph& graph) {
  // Views of the graph's own names: a training graph has hundreds of
  // thousands of values, and copying each name into the sets was most of
  // the check's time.
  size_t values = graph.inputs.size() + graph.initializers.size();
  for (const Node& n : graph.nodes) values += n.outputs.size();
  std::unordered_set<std::string_view> available, produced;
  available.reserve(values);
  produced.reserve(values);
  for (const ValueInfo& v : graph.inputs) available.insert(v.name);
  for (const auto& [name, t] : graph.initializers) available.insert(name);
  for (const Node& n : graph.nodes) {
    for (const std::string& in : n.inputs)
      if (!in.empty() && !available.count(in))
        return invalid_argument("{} reads '{}', which no initializer, graph input or earlier node provides",
                                n.describe(), in);
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      if (graph.is_initializer(out))
        return invalid_argument("{} outputs '{}', which is also an initializer", n.describe(), out);
      if (!produced.insert(out).second)
        return invalid_argument("value '{}' is produced twice (again by {})", out, n.describe());
      available.insert(out);
    }
  }
  for (const ValueInfo& o : graph.outputs)
    if (!available.count(o.name)) return invalid_argument("graph output '{}' is not provided", o.name);
  std::set<std::string> listed(graph.initializer_order.begin(), graph.initializer_order.end());
  for (const std::string& name : listed)
    if (!graph.is_initializer(name))
      return invalid_argument("initializer_order lists '{}', which is not an initializer", name);
  return Status::Ok();
}

}  // namespace ort_train
