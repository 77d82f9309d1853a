// dead_code_elimination: removes the nodes whose outputs nothing needs, then
// the initializers nothing reads.
//
// A value is needed when it is a graph output, protected (frozen), or read by
// a needed node. One walk from the last node to the first decides every node
// (the order is topological, so all readers of a node's outputs come after
// it), which is already the fixed point: removing a dead node cannot make an
// earlier decision wrong. Initializers that are graph inputs or graph outputs
// stay, as do protected ones. Nodes have no side effects in this IR (the
// trainer reads what it needs from graph outputs), so a node without outputs
// is dead too.
#include <unordered_set>

#include "graph/graph_index.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

class DeadCodeElimination : public Pass {
 public:
  std::string name() const override { return "dead_code_elimination"; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    const std::set<std::string> keep = protected_values(g, ctx);
    std::unordered_set<std::string> needed(keep.begin(), keep.end());
    for (const ValueInfo& v : g.outputs) needed.insert(v.name);

    std::vector<size_t> dead;
    for (size_t i = g.nodes.size(); i-- > 0;) {
      const Node& n = g.nodes[i];
      bool live = false;
      for (const std::string& o : n.outputs) live = live || (!o.empty() && needed.count(o));
      if (!live) {
        dead.push_back(i);
        continue;
      }
      for (const std::string& in : n.inputs)
        if (!in.empty()) needed.insert(in);
    }
    erase_nodes(g, dead);

    std::unordered_set<std::string> graph_inputs;
    for (const ValueInfo& v : g.inputs) graph_inputs.insert(v.name);
    std::unordered_set<std::string> unread;
    for (const auto& [name, t] : g.initializers)
      if (!needed.count(name) && !graph_inputs.count(name)) unread.insert(name);
    for (const std::string& name : unread) {
      g.initializers.erase(name);
      g.values.erase(name);
    }
    std::erase_if(g.initializer_order, [&](const std::string& n) { return unread.count(n) > 0; });
    std::erase_if(g.declared_value_infos, [&](const std::string& n) { return unread.count(n) > 0; });

    ctx.count(static_cast<int64_t>(dead.size() + unread.size()));
    return !dead.empty() || !unread.empty();
  }
};

ORT_REGISTER_PASS(DeadCodeElimination);

}  // namespace
}  // namespace ort_train
