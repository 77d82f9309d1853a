// rms_norm_fusion: RMSNorm (Llama, T5, Mistral) as exporters spell it,
//
//   r = 1 / Sqrt(Add(ReduceMean(Pow(x, 2), axes), eps))   y = Mul(Mul(x, r), weight)
//
// with Div(x, Sqrt(...)) or Mul(x, Reciprocal(Sqrt(...))) for the middle,
// operands in either order, and the Cast to float that Hugging Face writes
// between the two products (absorbed only where x is known to be float, so
// it is the identity), becomes one com.ort_train
// SimplifiedLayerNormalization(x, weight) (ONNX Runtime's name and
// semantics: no mean subtracted, no bias). Its gradient is one
// SimplifiedLayerNormalizationGrad instead of about fifteen nodes. The axes
// must be a suffix of x's dims and the weight an initializer with one dim
// per normalized axis; without a weight the nodes stay.
#include <fmt/format.h>

#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

class RmsNormFusion : public Pass {
 public:
  std::string name() const override { return "rms_norm_fusion"; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    GraphIndex index(g);
    PatternMatcher pm(index, ctx);
    std::vector<FusedMatch> matches;
    // The single default-domain reader `op` of `value` (binary unless a Cast or Reciprocal), or nullptr.
    auto only_reader = [&](const std::string& value, const std::string& op) -> const Node* {
      const auto& uses = index.consumers(value);
      if (uses.size() != 1 || pm.claimed().count(uses[0].node) || index.is_graph_output(value)) return nullptr;
      const Node& n = g.nodes[uses[0].node];
      return n.op_type == op && n.domain.empty() && (op == "Cast" || op == "Reciprocal" || n.inputs.size() == 2) ? &n : nullptr;
    };
    for (const Node& sqrt : g.nodes) {
      if (sqrt.op_type != "Sqrt" || !sqrt.domain.empty()) continue;
      const Node* add_eps = pm.producer(sqrt.inputs[0], "Add");
      if (!add_eps || add_eps->inputs.size() != 2) continue;
      bool eps_second = pm.scalar(add_eps->inputs[1]).has_value();
      auto eps = pm.scalar(add_eps->inputs[eps_second ? 1 : 0]);
      const Node* mean = pm.producer(add_eps->inputs[eps_second ? 0 : 1], "ReduceMean");
      const Node* pow = mean ? pm.producer(mean->inputs[0], "Pow") : nullptr;
      if (!eps || !pow || !pm.is_scalar(pow->inputs[1], 2.0)) continue;
      const std::string& x = pow->inputs[0];
      auto axes = reduce_mean_axes(g, *mean);
      auto axis = axes ? suffix_axis(*axes, pm.rank(x)) : std::nullopt;
      // x's type: declared, or the `to` of the Cast that makes it (exporters cast to float first).
      std::optional<DType> type = pm.dtype(x);
      if (!type)
        if (const Node* cast = pm.producer(x, "Cast")) type = dtype_from_onnx(static_cast<int32_t>(cast->attr_int("to", 0)));
      if (!axis || (type && *type != DType::kFloat && *type != DType::kDouble)) continue;
      const int64_t first_axis = *axis;
      std::set<size_t> nodes = {pm.position(pow), pm.position(mean), pm.position(add_eps), pm.position(&sqrt)};

      // x / sqrt, or x * (1 / sqrt), or x * Reciprocal(sqrt).
      const Node* normed = nullptr;
      if (const Node* div = only_reader(sqrt.outputs[0], "Div")) {
        if (div->inputs[0] == x && div->inputs[1] == sqrt.outputs[0]) {
          normed = div;
        } else if (div->inputs[1] == sqrt.outputs[0] && pm.is_scalar(div->inputs[0], 1.0)) {
          const Node* mul = only_reader(div->outputs[0], "Mul");
          if (mul && (mul->inputs[0] == x || mul->inputs[1] == x)) {
            nodes.insert(pm.position(div));
            normed = mul;
          }
        }
      } else if (const Node* rec = only_reader(sqrt.outputs[0], "Reciprocal")) {
        const Node* mul = only_reader(rec->outputs[0], "Mul");
        if (mul && (mul->inputs[0] == x || mul->inputs[1] == x)) {
          nodes.insert(pm.position(rec));
          normed = mul;
        }
      }
      if (!normed) continue;
      nodes.insert(pm.position(normed));
      std::string scaled = normed->outputs[0];
      if (const Node* cast = only_reader(scaled, "Cast");
          cast && type == DType::kFloat && cast->attr_int("to", 0) == static_cast<int64_t>(DType::kFloat)) {
        nodes.insert(pm.position(cast));
        scaled = cast->outputs[0];
      }
      // The weight: an initializer over the normalized dims, of x's type.
      const Node* last = only_reader(scaled, "Mul");
      if (!last) continue;
      const std::string& weight = last->inputs[last->inputs[0] == scaled ? 1 : 0];
      auto it = g.initializers.find(weight);
      if (it == g.initializers.end() || it->second.dims().size() != static_cast<size_t>(-first_axis) ||
          (it->second.dtype() != DType::kFloat && it->second.dtype() != DType::kDouble) ||
          (type && it->second.dtype() != *type))
        continue;
      if (std::any_of(it->second.dims().begin(), it->second.dims().end(), [](int64_t d) { return d <= 1; })) continue;
      nodes.insert(pm.position(last));
      if (!pm.closed(nodes, pm.position(last))) continue;
      pm.claim(nodes);
      Node fused = fused_node(index, *last, "SimplifiedLayerNormalization", {x, weight},
                              {Attribute::make_int("axis", first_axis), Attribute::make_float("epsilon", static_cast<float>(*eps))});
      ctx.note(fmt::format("{}: {} nodes -> 1", fused.name, nodes.size()));
      matches.push_back(FusedMatch{pm.position(last), std::move(nodes), std::move(fused)});
    }
    return replace_matches(model, index, ctx, std::move(matches));
  }
};

ORT_REGISTER_PASS(RmsNormFusion);

}  // namespace
}  // namespace ort_train
