// silu_fusion: SiLU (Swish, Llama's and Mistral's MLP activation) as exporters
// spell it, x * Sigmoid(x) with the operands in either order, becomes one
// com.ort_train Silu(x). The pair's backward is Sigmoid's, the product rule
// and a sum (five nodes, and the sigmoid kept alive until the backward); the
// fused op's is one SiluGrad(dY, X), which recomputes the sigmoid from X.
#include <fmt/format.h>

#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

class SiluFusion : public FusionPass {
 public:
  std::string name() const override { return "silu_fusion"; }

  std::optional<FusedMatch> match(const Node& sig, PatternMatcher& pm) override {
    if (sig.op_type != "Sigmoid" || !sig.domain.empty() || sig.inputs.size() != 1) return std::nullopt;
    const std::string& x = sig.inputs[0];
    const Node* mul = pm.sole_reader(sig.outputs[0], "Mul", 2);
    if (!mul || mul->inputs[mul->inputs[0] == sig.outputs[0] ? 1 : 0] != x) return std::nullopt;
    auto type = pm.dtype(x);
    if (type && *type != DType::kFloat && *type != DType::kDouble) return std::nullopt;
    std::set<size_t> nodes = {pm.position(&sig), pm.position(mul)};
    if (!pm.closed(nodes, pm.position(mul))) return std::nullopt;
    Node fused = fused_node(pm.index(), *mul, "Silu", {x}, {});
    pm.context().note(fmt::format("{}: Sigmoid, Mul -> 1", fused.name));
    return FusedMatch{pm.position(mul), std::move(nodes), std::move(fused)};
  }
};

ORT_REGISTER_PASS(SiluFusion);

}  // namespace
}  // namespace ort_train
