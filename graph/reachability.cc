#include "graph/reachability.h"

#include <unordered_map>
#include <unordered_set>

namespace ort_train {

std::vector<size_t> nodes_reaching(const Graph& g, const std::vector<std::string>& values) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& o : g.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  std::vector<bool> needed(g.nodes.size(), false);
  std::vector<std::string> stack(values.begin(), values.end());
  std::unordered_set<std::string> seen(values.begin(), values.end());
  while (!stack.empty()) {
    std::string v = std::move(stack.back());
    stack.pop_back();
    auto it = producer.find(v);
    if (it == producer.end() || needed[it->second]) continue;
    needed[it->second] = true;
    for (const std::string& in : g.nodes[it->second].inputs)
      if (!in.empty() && seen.insert(in).second) stack.push_back(in);
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < needed.size(); ++i)
    if (needed[i]) out.push_back(i);
  return out;
}

Result<Model> extract_subgraph(const Model& m, const std::vector<std::string>& outputs) {
  Model sub = m;  // tensors share storage: the subgraph sees the same initializer values
  sub.graph.nodes.clear();
  for (size_t i : nodes_reaching(m.graph, outputs)) sub.graph.nodes.push_back(m.graph.nodes[i]);
  sub.graph.outputs.clear();
  for (const std::string& o : outputs) {
    const ValueInfo* v = m.graph.value(o);
    if (!v) return invalid_argument("'{}' is not a value of the model", o);
    sub.graph.outputs.push_back(*v);
  }
  return sub;
}

}  // namespace ort_train
