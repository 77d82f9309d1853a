// redundant_node_elimination: nodes whose output is their input, unchanged,
// as exporters leave them in shape arithmetic and dtype plumbing:
//   - Identity(x);
//   - Cast(x) to the type x already has;
//   - Unsqueeze(Squeeze(x, axes), axes) and Squeeze(Unsqueeze(x, axes), axes)
//     (GPT-2's export squeezes each size to a scalar and unsqueezes it back
//     for a Concat);
//   - Expand(x, Shape(y)) when every reader broadcasts its operands and reads y
//     too (DistilBERT's mask.expand_as(scores) before a Where on the scores):
//     the reader's own broadcasting makes the same tensor, and the scores are
//     no longer read by a Shape (which kept attention_fusion away);
//   - the inner Reshape of Reshape(Reshape(x, a), b), when b is a constant
//     that copies no dim (no 0, or allowzero): the outer one reads x itself.
// Readers of the output read x instead; the node (and a Squeeze or Unsqueeze
// nobody reads any more, through dead_code_elimination) goes. Exact by
// construction, so on by default. A graph output keeps its name (an Identity
// stays to make it), and a protected value is never rewired.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "graph/graph_index.h"
#include "graph/op_schema.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

// Squeeze's or Unsqueeze's axes (attribute before opset 13, constant input
// after), normalized against `rank` and sorted; none when not constant.
std::optional<std::vector<int64_t>> axes_of(const Graph& g, const Node& n, int64_t opset, int64_t rank) {
  std::vector<int64_t> axes;
  if (opset < 13) {
    if (!n.attr("axes")) return std::nullopt;
    axes = n.attr_ints("axes");
  } else {
    if (n.inputs.size() < 2) return std::nullopt;
    auto it = g.initializers.find(n.inputs[1]);
    if (it == g.initializers.end() || it->second.dtype() != DType::kInt64) return std::nullopt;
    axes.assign(it->second.data<int64_t>(), it->second.data<int64_t>() + it->second.numel());
  }
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// Ops that broadcast all their operands against each other (numpy style).
bool broadcasts_operands(const Node& n) {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Equal", "Less", "Greater",
                                            "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Max", "Min",
                                            "Sum", "Mean"};
  return n.domain.empty() && ops.count(n.op_type);
}

// Whether Expand node `n` only spells out a broadcast its readers make anyway.
bool expand_is_broadcast(const Graph& g, const GraphIndex& index, const Node& n) {
  if (n.inputs.size() != 2) return false;
  auto p = index.producer(n.inputs[1]);
  const Node* shape = p ? &g.nodes[*p] : nullptr;
  if (!shape || shape->op_type != "Shape" || !shape->domain.empty() || shape->attr("start") || shape->attr("end"))
    return false;
  const std::string& y = shape->inputs[0];
  const auto& uses = index.consumers(n.outputs[0]);
  if (uses.empty()) return false;
  for (const auto& use : uses) {
    const Node& reader = g.nodes[use.node];
    if (!broadcasts_operands(reader) || std::find(reader.inputs.begin(), reader.inputs.end(), y) == reader.inputs.end())
      return false;
  }
  return true;
}

const ValueInfo* info(const Graph& g, const std::string& v) {
  const ValueInfo* i = g.value(v);
  return i && i->dtype != DType::kUndefined ? i : nullptr;
}

class RedundantNodeElimination : public Pass {
 public:
  std::string name() const override { return "redundant_node_elimination"; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    GraphIndex& index = ctx.index(g);
    const std::set<std::string> keep = protected_values(g, ctx);
    const int64_t opset = model.opset("");
    std::vector<size_t> removed;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (!n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) continue;
      const std::string& out = n.outputs[0];
      if (out.empty() || index.is_graph_output(out) || keep.count(out)) continue;
      std::string source;  // the value `out` equals
      if (n.op_type == "Identity") {
        source = n.inputs[0];
      } else if (n.op_type == "Cast") {
        const ValueInfo* x = info(g, n.inputs[0]);
        if (x && n.attr("to") && dtype_from_onnx(static_cast<int32_t>(n.attr_int("to", 0))) == x->dtype)
          source = n.inputs[0];
      } else if (n.op_type == "Squeeze" || n.op_type == "Unsqueeze") {
        auto p = index.producer(n.inputs[0]);
        const Node* inner = p ? &g.nodes[*p] : nullptr;
        const char* undo = n.op_type == "Squeeze" ? "Unsqueeze" : "Squeeze";
        if (!inner || inner->op_type != undo || !inner->domain.empty() || inner->inputs.empty()) continue;
        // Axes are counted in the larger tensor: Squeeze's input, Unsqueeze's output.
        const ValueInfo* larger = info(g, n.op_type == "Squeeze" ? n.inputs[0] : out);
        if (!larger || !larger->shape) continue;
        const int64_t rank = static_cast<int64_t>(larger->shape->size());
        auto a = axes_of(g, n, opset, rank), b = axes_of(g, *inner, opset, rank);
        if (a && b && *a == *b && !a->empty()) source = inner->inputs[0];
      } else if (n.op_type == "Expand" && expand_is_broadcast(g, index, n)) {
        source = n.inputs[0];
      }
      if (source.empty() || source == out) continue;
      RETURN_IF_ERROR(index.replace_all_uses(out, source));
      ctx.note(fmt::format("{} ({})", n.name, n.op_type));
      removed.push_back(i);
    }
    // Reshape chains: the outer Reshape reads the inner one's input (the inner
    // one, read by nothing else now, is left to dead_code_elimination).
    int64_t chains = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      if (n.op_type != "Reshape" || !n.domain.empty() || n.inputs.size() < 2) continue;
      auto p = index.producer(n.inputs[0]);
      const Node* inner = p ? &g.nodes[*p] : nullptr;
      if (!inner || inner->op_type != "Reshape" || !inner->domain.empty() || inner->inputs.empty()) continue;
      auto target = g.initializers.find(n.inputs[1]);
      if (target == g.initializers.end() || target->second.dtype() != DType::kInt64) continue;
      const int64_t* t = target->second.data<int64_t>();
      bool allowzero = opset >= 14 && n.attr_int("allowzero", 0) != 0;
      bool has_zero = std::find(t, t + target->second.numel(), 0) != t + target->second.numel();
      if (has_zero && !allowzero) continue;  // a 0 copies a dim of the inner Reshape's output
      ctx.note(fmt::format("{} (Reshape of a Reshape)", inner->name));
      n.inputs[0] = inner->inputs[0];
      ++chains;
    }
    if (chains > 0) index.rebuild();
    index.remove_nodes(removed);
    ctx.count(static_cast<int64_t>(removed.size()) + chains);
    return !removed.empty() || chains > 0;
  }
};

ORT_REGISTER_PASS(RedundantNodeElimination);

}  // namespace
}  // namespace ort_train
