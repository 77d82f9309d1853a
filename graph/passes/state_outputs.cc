#include "graph/passes/state_outputs.h"

#include <algorithm>
#include <unordered_set>

#include "graph/passes/op_traits.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

// Every declared state output whose input is an initializer, in node order.
std::vector<std::pair<std::string, std::string>> state_pairs(const Graph& g) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const Node& n : g.nodes)
    for (const auto& [out, in] : state_outputs(n))
      if (out < n.outputs.size() && !n.outputs[out].empty() && in < n.inputs.size() && g.is_initializer(n.inputs[in]))
        pairs.emplace_back(n.outputs[out], n.inputs[in]);
  return pairs;
}

class StateOutputs : public Pass {
 public:
  std::string name() const override { return "state_outputs"; }
  PassOrder order() const override { return {.phases = kStepPhase, .required = true}; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    std::unordered_set<std::string> outputs;
    for (const ValueInfo& v : g.outputs) outputs.insert(v.name);
    int64_t added = 0;
    for (const auto& [out, init] : state_pairs(g)) {
      if (!outputs.insert(out).second) continue;
      ValueInfo v;
      v.name = out;
      if (const ValueInfo* info = g.value(out)) v = *info;
      g.outputs.push_back(v);
      ctx.note(out + " -> " + init);
      ++added;
    }
    ctx.count(added);
    return added > 0;
  }
};

ORT_REGISTER_PASS(StateOutputs);

}  // namespace

std::vector<std::pair<std::string, std::string>> state_writebacks(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> pairs = state_pairs(graph);
  std::erase_if(pairs, [&](const auto& p) {
    return std::none_of(graph.outputs.begin(), graph.outputs.end(),
                        [&](const ValueInfo& v) { return v.name == p.first; });
  });
  return pairs;
}

}  // namespace ort_train
