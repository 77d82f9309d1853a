// shape_hoisting: a Shape node moves to just after the node that produces
// its input. A Shape reads only the dims, but the executor keeps its input
// alive until the Shape runs; the backward's Shape(x) nodes (which size a
// gradient like its forward value) otherwise keep forward activations alive
// through the whole backward: GPT-2's sliced [batch, seq, vocab] logits, 196
// MiB at its base size, once shape_folding had removed the forward Shape that
// the gradient used to share. After the move x dies at its last real reader
// and only the small shape lives on.
//
// Exact (a Shape's value does not depend on when it runs) and on by default;
// it moves nodes only, and only forward, so the order stays topological.
#include <fmt/format.h>

#include <map>

#include "graph/graph_index.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

class ShapeHoisting : public Pass {
 public:
  std::string name() const override { return "shape_hoisting"; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    GraphIndex& index = ctx.index(g);
    std::map<size_t, std::vector<size_t>> after;  // producer -> Shape nodes to place right after it
    std::vector<bool> moved(g.nodes.size(), false);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (n.op_type != "Shape" || !n.domain.empty() || n.inputs.size() != 1) continue;
      auto p = index.producer(n.inputs[0]);
      if (!p || *p + 1 >= i) continue;  // a feed or initializer lives anyway; already in place
      // Already right after its producer, behind other hoisted Shapes of its outputs?
      bool in_place = true;
      for (size_t k = *p + 1; k < i && in_place; ++k) {
        const Node& m = g.nodes[k];
        in_place = m.op_type == "Shape" && m.domain.empty() && m.inputs.size() == 1 && index.producer(m.inputs[0]) == p;
      }
      if (in_place) continue;
      after[*p].push_back(i);
      moved[i] = true;
    }
    if (after.empty()) return false;
    int64_t count = 0;
    for (const auto& [p, shapes] : after)
      for (size_t s : shapes) {
        ctx.note(fmt::format("{}: moved after {}", g.nodes[s].name, g.nodes[p].name));
        ++count;
      }
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (moved[i]) continue;
      nodes.push_back(std::move(g.nodes[i]));
      if (auto it = after.find(i); it != after.end())
        for (size_t s : it->second) nodes.push_back(std::move(g.nodes[s]));
    }
    g.nodes = std::move(nodes);
    ctx.count(count);
    return true;
  }
};

ORT_REGISTER_PASS(ShapeHoisting);

}  // namespace
}  // namespace ort_train
