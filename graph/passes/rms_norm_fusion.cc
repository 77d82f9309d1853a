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

class RmsNormFusion : public FusionPass {
 public:
  std::string name() const override { return "rms_norm_fusion"; }

  std::optional<FusedMatch> match(const Node& sqrt, PatternMatcher& pm) override {
    if (sqrt.op_type != "Sqrt" || !sqrt.domain.empty() || sqrt.inputs.empty()) return std::nullopt;
    const Node* add_eps = pm.producer(sqrt.inputs[0], "Add", 2);
    if (!add_eps || add_eps->inputs.size() != 2) return std::nullopt;
    bool eps_second = pm.scalar(add_eps->inputs[1]).has_value();
    auto eps = pm.scalar(add_eps->inputs[eps_second ? 1 : 0]);
    const Node* mean = pm.producer(add_eps->inputs[eps_second ? 0 : 1], "ReduceMean", 1);
    const Node* pow = mean ? pm.producer(mean->inputs[0], "Pow", 2) : nullptr;
    if (!eps || !pow || !pm.is_scalar(pow->inputs[1], 2.0)) return std::nullopt;
    const std::string& x = pow->inputs[0];
    auto axes = reduce_mean_axes(pm.graph(), *mean);
    auto axis = axes ? suffix_axis(*axes, pm.rank(x)) : std::nullopt;
    // x's type: declared, or the `to` of the Cast that makes it (exporters cast to float first).
    std::optional<DType> type = pm.dtype(x);
    if (!type)
      if (const Node* cast = pm.producer(x, "Cast", 1)) type = dtype_from_onnx(static_cast<int32_t>(cast->attr_int("to", 0)));
    if (!axis || (type && *type != DType::kFloat && *type != DType::kDouble)) return std::nullopt;
    const int64_t first_axis = *axis;
    std::set<size_t> nodes = {pm.position(pow), pm.position(mean), pm.position(add_eps), pm.position(&sqrt)};

    // x / sqrt, or x * (1 / sqrt), or x * Reciprocal(sqrt).
    const Node* normed = nullptr;
    if (const Node* div = pm.sole_reader(sqrt.outputs[0], "Div", 2)) {
      if (div->inputs[0] == x && div->inputs[1] == sqrt.outputs[0]) {
        normed = div;
      } else if (div->inputs[1] == sqrt.outputs[0] && pm.is_scalar(div->inputs[0], 1.0)) {
        const Node* mul = pm.sole_reader(div->outputs[0], "Mul", 2);
        if (mul && (mul->inputs[0] == x || mul->inputs[1] == x)) {
          nodes.insert(pm.position(div));
          normed = mul;
        }
      }
    } else if (const Node* rec = pm.sole_reader(sqrt.outputs[0], "Reciprocal", 1)) {
      const Node* mul = pm.sole_reader(rec->outputs[0], "Mul", 2);
      if (mul && (mul->inputs[0] == x || mul->inputs[1] == x)) {
        nodes.insert(pm.position(rec));
        normed = mul;
      }
    }
    if (!normed) return std::nullopt;
    nodes.insert(pm.position(normed));
    std::string scaled = normed->outputs[0];
    if (const Node* cast = pm.sole_reader(scaled, "Cast", 1);
        cast && type == DType::kFloat && cast->attr_int("to", 0) == static_cast<int64_t>(DType::kFloat)) {
      nodes.insert(pm.position(cast));
      scaled = cast->outputs[0];
    }
    // The weight: an initializer over the normalized dims, of x's type.
    const Node* last = pm.sole_reader(scaled, "Mul", 2);
    if (!last) return std::nullopt;
    const std::string& weight = last->inputs[last->inputs[0] == scaled ? 1 : 0];
    auto it = pm.graph().initializers.find(weight);
    if (it == pm.graph().initializers.end() || it->second.dims().size() != static_cast<size_t>(-first_axis) ||
        (it->second.dtype() != DType::kFloat && it->second.dtype() != DType::kDouble) ||
        (type && it->second.dtype() != *type))
      return std::nullopt;
    if (std::any_of(it->second.dims().begin(), it->second.dims().end(), [](int64_t d) { return d <= 1; })) return std::nullopt;
    nodes.insert(pm.position(last));
    if (!pm.closed(nodes, pm.position(last))) return std::nullopt;
    Node fused = fused_node(pm.index(), *last, "SimplifiedLayerNormalization", {x, weight},
                            {Attribute::make_int("axis", first_axis), Attribute::make_float("epsilon", static_cast<float>(*eps))});
    pm.context().note(fmt::format("{}: {} nodes -> 1", fused.name, nodes.size()));
    return FusedMatch{pm.position(last), std::move(nodes), std::move(fused)};
  }
};

ORT_REGISTER_PASS(RmsNormFusion);

}  // namespace
}  // namespace ort_train
