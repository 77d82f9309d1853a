// gelu_fusion: the GELU that exporters spell out before opset 20, in its two
// forms,
//
//   exact (BERT):        0.5 * x * (1 + Erf(x / sqrt(2)))          (or x * 0.70710678)
//   tanh (GPT-2's new):  0.5 * x * (1 + Tanh(0.7978845608 * (x + 0.044715 * Pow(x, 3))))
//
// where the cube may also be x * (x * x), as PyTorch's exporter writes
// F.gelu(approximate="tanh"),
// with the 0.5 applied to x first or to the product last, operands in either
// order, becomes one com.ort_train Gelu(x) with approximate = none | tanh
// (the opset-20 op's semantics; tanh stays tanh, nothing is approximated
// further). Its gradient is one GeluGrad instead of the chain's ten nodes.
#include <fmt/format.h>

#include <cmath>

#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

// v = x^3, as Pow(x, 3) or x * (x * x) in any operand order; adds the nodes to `nodes`.
bool is_cube_of(PatternMatcher& pm, const std::string& v, const std::string& x, std::set<size_t>& nodes) {
  if (const Node* pow = pm.producer(v, "Pow", 2)) {
    if (pow->inputs[0] != x || !pm.is_scalar(pow->inputs[1], 3.0)) return false;
    nodes.insert(pm.position(pow));
    return true;
  }
  const Node* outer = pm.producer(v, "Mul", 2);
  if (!outer) return false;
  for (size_t k = 0; k < 2; ++k) {
    if (outer->inputs[k] != x) continue;
    const Node* square = pm.producer(outer->inputs[1 - k], "Mul", 2);
    if (square && square->inputs[0] == x && square->inputs[1] == x) {
      nodes.insert({pm.position(outer), pm.position(square)});
      return true;
    }
  }
  return false;
}

class GeluFusion : public FusionPass {
 public:
  std::string name() const override { return "gelu_fusion"; }

  std::optional<FusedMatch> match(const Node& core, PatternMatcher& pm) override {
    const bool exact = core.op_type == "Erf", tanh = core.op_type == "Tanh";
    if ((!exact && !tanh) || !core.domain.empty() || core.inputs.empty()) return std::nullopt;
    std::set<size_t> nodes = {pm.position(&core)};
    std::string x;
    if (exact) {  // x / sqrt(2) or x * (1 / sqrt(2))
      if (const Node* div = pm.producer(core.inputs[0], "Div", 2); div && pm.is_scalar(div->inputs[1], std::sqrt(2.0))) {
        x = div->inputs[0];
        nodes.insert(pm.position(div));
      } else if (const Node* mul = pm.producer(core.inputs[0], "Mul", 2)) {
        auto other = pm.other_than_scalar(*mul, 1.0 / std::sqrt(2.0));
        if (!other) return std::nullopt;
        x = *other;
        nodes.insert(pm.position(mul));
      } else {
        return std::nullopt;
      }
    } else {  // 0.7978845608 * (x + 0.044715 * x^3)
      const Node* scale = pm.producer(core.inputs[0], "Mul", 2);
      auto inner = scale ? pm.other_than_scalar(*scale, std::sqrt(2.0 / M_PI)) : std::nullopt;
      const Node* add = inner ? pm.producer(*inner, "Add", 2) : nullptr;
      if (!add || add->inputs.size() != 2) return std::nullopt;
      const Node* cubic = nullptr;
      for (size_t k = 0; k < 2 && !cubic; ++k) {
        const Node* m = pm.producer(add->inputs[k], "Mul", 2);
        auto p = m ? pm.other_than_scalar(*m, 0.044715) : std::nullopt;
        if (p && is_cube_of(pm, *p, add->inputs[1 - k], nodes)) {
          cubic = m;
          x = add->inputs[1 - k];
          nodes.insert(pm.position(m));
        }
      }
      if (!cubic) return std::nullopt;
      nodes.insert({pm.position(scale), pm.position(add)});
    }
    // 1 + core
    const Node* one = pm.sole_reader(core.outputs[0], "Add", 2);
    if (!one || !pm.other_than_scalar(*one, 1.0)) return std::nullopt;
    nodes.insert(pm.position(one));
    // (x * (1 + core)) * 0.5, or (x * 0.5) * (1 + core)
    const Node* prod = pm.sole_reader(one->outputs[0], "Mul", 2);
    if (!prod) return std::nullopt;
    nodes.insert(pm.position(prod));
    const std::string& other = prod->inputs[prod->inputs[0] == one->outputs[0] ? 1 : 0];
    const Node* last = nullptr;
    if (other == x) {
      const Node* half = pm.sole_reader(prod->outputs[0], "Mul", 2);
      if (half && pm.other_than_scalar(*half, 0.5)) last = half;
    } else if (const Node* half = pm.producer(other, "Mul", 2); half && pm.other_than_scalar(*half, 0.5) == x) {
      nodes.insert(pm.position(half));
      last = prod;
    }
    auto type = pm.dtype(x);
    if (!last || (type && *type != DType::kFloat && *type != DType::kDouble)) return std::nullopt;
    nodes.insert(pm.position(last));
    if (!pm.closed(nodes, pm.position(last))) return std::nullopt;

    Node fused = fused_node(pm.index(), *last, "Gelu", {x}, {Attribute::make_string("approximate", exact ? "none" : "tanh")});
    pm.context().note(fmt::format("{} ({}): {} nodes -> 1", fused.name, exact ? "Erf form" : "Tanh form", nodes.size()));
    return FusedMatch{pm.position(last), std::move(nodes), std::move(fused)};
  }
};

ORT_REGISTER_PASS(GeluFusion);

}  // namespace
}  // namespace ort_train
