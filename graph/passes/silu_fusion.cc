// silu_fusion: SiLU (Swish, Llama's and Mistral's MLP activation) as exporters
// spell it, x * Sigmoid(x) with the operands in either order, becomes one
// com.ort_train Silu(x). The pair's backward is Sigmoid's, the product rule
// and a sum (five nodes, and the sigmoid kept alive until the backward); the
// fused op's is one SiluGrad(dY, X), which recomputes the sigmoid from X.
#include <fmt/format.h>

#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

class SiluFusion : public Pass {
 public:
  std::string name() const override { return "silu_fusion"; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    GraphIndex index(g);
    PatternMatcher pm(index, ctx);
    std::vector<FusedMatch> matches;
    for (const Node& sig : g.nodes) {
      if (sig.op_type != "Sigmoid" || !sig.domain.empty() || sig.inputs.size() != 1) continue;
      const std::string& x = sig.inputs[0];
      const auto& uses = index.consumers(sig.outputs[0]);
      if (uses.size() != 1 || pm.claimed().count(uses[0].node)) continue;
      const Node& mul = g.nodes[uses[0].node];
      if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2) continue;
      if (mul.inputs[mul.inputs[0] == sig.outputs[0] ? 1 : 0] != x) continue;
      auto type = pm.dtype(x);
      if (type && *type != DType::kFloat && *type != DType::kDouble) continue;
      std::set<size_t> nodes = {pm.position(&sig), pm.position(&mul)};
      if (!pm.closed(nodes, pm.position(&mul))) continue;
      pm.claim(nodes);
      Node fused = fused_node(index, mul, "Silu", {x}, {});
      ctx.note(fmt::format("{}: Sigmoid, Mul -> 1", fused.name));
      matches.push_back(FusedMatch{pm.position(&mul), std::move(nodes), std::move(fused)});
    }
    return replace_matches(model, index, ctx, std::move(matches));
  }
};

ORT_REGISTER_PASS(SiluFusion);

}  // namespace
}  // namespace ort_train
