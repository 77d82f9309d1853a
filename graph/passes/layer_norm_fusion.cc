// layer_norm_fusion: the LayerNorm that exporters decompose before opset 17,
//
//   m = ReduceMean(x, axes)          d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2), axes)  n = Div(d, Sqrt(Add(v, eps)))
//   y = Add(Mul(n, gamma), beta)     (Mul and Add in either operand order)
//
// becomes one com.ort_train LayerNormalization(x, gamma, beta) (the opset-17
// op's semantics, available at any opset), whose gradient is one fused
// LayerNormalizationGrad instead of about twenty nodes. The axes must be a
// suffix of x's dims (the LayerNorm case), and gamma and beta initializers
// with one dim per normalized axis (so they cover the normalized shape, as
// the fused kernel requires). A pattern without gamma is left alone. x
// stays the statistics' input, so a trainable gamma or beta still trains
// through the fused gradient.
#include <fmt/format.h>

#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

class LayerNormFusion : public FusionPass {
 public:
  std::string name() const override { return "layer_norm_fusion"; }

  std::optional<FusedMatch> match(const Node& div, PatternMatcher& pm) override {
    if (div.op_type != "Div" || !div.domain.empty() || div.inputs.size() != 2) return std::nullopt;
    const Node* sqrt = pm.producer(div.inputs[1], "Sqrt", 1);
    const Node* add_eps = sqrt ? pm.producer(sqrt->inputs[0], "Add", 2) : nullptr;
    if (!add_eps || add_eps->inputs.size() != 2) return std::nullopt;
    bool eps_second = pm.scalar(add_eps->inputs[1]).has_value();
    const std::string& var = add_eps->inputs[eps_second ? 0 : 1];
    auto eps = pm.scalar(add_eps->inputs[eps_second ? 1 : 0]);
    const Node* var_mean = pm.producer(var, "ReduceMean", 1);
    const Node* pow = var_mean ? pm.producer(var_mean->inputs[0], "Pow", 2) : nullptr;
    const Node* sub = pm.producer(div.inputs[0], "Sub", 2);
    if (!eps || !pow || !sub || pow->inputs[0] != div.inputs[0] || !pm.is_scalar(pow->inputs[1], 2.0)) return std::nullopt;
    const std::string& x = sub->inputs[0];
    const Node* mean = pm.producer(sub->inputs[1], "ReduceMean", 1);
    if (!mean || mean->inputs[0] != x) return std::nullopt;
    auto axes = reduce_mean_axes(pm.graph(), *mean);
    if (!axes || reduce_mean_axes(pm.graph(), *var_mean) != axes) return std::nullopt;
    auto axis = suffix_axis(*axes, pm.rank(x));
    // Types are known only where the file declares them (the passes run before inference).
    auto type = pm.dtype(x);
    if (!axis || (type && *type != DType::kFloat && *type != DType::kDouble)) return std::nullopt;

    std::set<size_t> nodes = {pm.position(mean), pm.position(sub),     pm.position(pow), pm.position(var_mean),
                              pm.position(add_eps), pm.position(sqrt), pm.position(&div)};
    // The affine part: y = n * gamma (+ beta), each a parameter over the normalized dims.
    auto affine = [&](const std::string& value, const std::string& op) -> std::pair<const Node*, std::string> {
      const auto& uses = pm.index().consumers(value);
      if (uses.size() != 1 || pm.index().is_graph_output(value)) return {nullptr, ""};
      const Node& n = pm.graph().nodes[uses[0].node];
      if (n.op_type != op || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.empty()) return {nullptr, ""};
      const std::string& p = n.inputs[1 - uses[0].slot];
      auto it = pm.graph().initializers.find(p);
      DType t = it == pm.graph().initializers.end() ? DType::kUndefined : it->second.dtype();
      if ((t != DType::kFloat && t != DType::kDouble) || (type && t != *type) ||
          it->second.dims().size() != static_cast<size_t>(-*axis))
        return {nullptr, ""};
      for (int64_t d : it->second.dims())
        if (d <= 1) return {nullptr, ""};
      return {&n, p};
    };
    auto [mul, gamma] = affine(div.outputs[0], "Mul");
    if (!mul) return std::nullopt;
    nodes.insert(pm.position(mul));
    auto [add, beta] = affine(mul->outputs[0], "Add");
    const Node* last = add ? add : mul;
    nodes.insert(pm.position(last));
    if (!pm.closed(nodes, pm.position(last))) return std::nullopt;

    std::vector<std::string> inputs = {x, gamma};
    if (add) inputs.push_back(beta);
    Node fused = fused_node(pm.index(), *last, "LayerNormalization", std::move(inputs),
                            {Attribute::make_int("axis", *axis), Attribute::make_float("epsilon", static_cast<float>(*eps))});
    pm.context().note(fmt::format("{}: {} nodes -> 1", fused.name, nodes.size()));
    return FusedMatch{pm.position(last), std::move(nodes), std::move(fused)};
  }
};

ORT_REGISTER_PASS(LayerNormFusion);

}  // namespace
}  // namespace ort_train
