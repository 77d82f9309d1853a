#include "graph/topo_sort.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace ort_train {

Status topological_sort(Graph& g) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& o : g.nodes[i].outputs) {
      if (o.empty()) continue;
      if (!producer.emplace(o, i).second)
        return invalid_argument("value '{}' is produced by two nodes ('{}' and '{}')", o,
                                g.nodes[producer[o]].name, g.nodes[i].name);
      if (g.is_initializer(o))
        return invalid_argument("value '{}' is both an initializer and the output of node '{}'", o, g.nodes[i].name);
    }
  std::unordered_set<std::string> graph_inputs;
  for (const ValueInfo& v : g.inputs) graph_inputs.insert(v.name);

  std::vector<std::vector<size_t>> consumers(g.nodes.size());
  std::vector<size_t> pending(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::unordered_set<size_t> deps;
    for (const std::string& in : g.nodes[i].inputs) {
      if (in.empty() || g.is_initializer(in) || graph_inputs.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return invalid_argument("{} reads '{}', which no node, initializer or graph input provides",
                                g.nodes[i].describe(), in);
      if (deps.insert(it->second).second) consumers[it->second].push_back(i);
    }
    pending[i] = deps.size();
  }
  // Min-heap on original index keeps file order among ready nodes.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(g.nodes.size());
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (order.size() != g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (pending[i] != 0) return invalid_argument("the graph has a cycle through {}", g.nodes[i].describe());
  }
  std::vector<Node> sorted;
  sorted.reserve(g.nodes.size());
  for (size_t i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
  for (const ValueInfo& o : g.outputs)
    if (!producer.count(o.name) && !g.is_initializer(o.name) && !graph_inputs.count(o.name))
      return invalid_argument("graph output '{}' is not produced by any node", o.name);
  return Status::Ok();
}

}  // namespace ort_train
