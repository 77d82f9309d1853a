// bias_softmax_fusion: attention's masked softmax, Softmax(scores + mask)
// over the last axis (BERT's padding mask, GPT-2's and Llama's causal and
// padding masks, all broadcast over heads), becomes one com.ort_train
// BiasSoftmax(scores, mask): each row's sum is formed and normalized while it
// is in cache, instead of an Add pass over the [B, H, T, T] scores and a
// Softmax pass reading them back. ONNX Runtime's BiasSoftmaxFusion.
//
// Exact, so on by default: the kernels make the Add's float additions and
// then the Softmax's row arithmetic. The gradient is Softmax's, for both
// operands (a trainable bias still trains: its gradient is summed over the
// broadcast dims as Add's was).
#include <fmt/format.h>

#include "graph/op_schema.h"
#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

class BiasSoftmaxFusion : public FusionPass {
 public:
  std::string name() const override { return "bias_softmax_fusion"; }

  std::optional<FusedMatch> match(const Node& softmax, PatternMatcher& pm) override {
    if (softmax.op_type != "Softmax" || !softmax.domain.empty() || softmax.inputs.size() != 1) return std::nullopt;
    auto rank = pm.rank(softmax.inputs[0]);
    if (!rank || *rank == 0) return std::nullopt;
    // Only the last axis, which both axis semantics (before opset 13: every
    // dim from axis on) normalize alike when axis is the last dim.
    int64_t axis = softmax.attr_int("axis", pm.opset() >= 13 ? -1 : 1);
    if (axis < 0) axis += static_cast<int64_t>(*rank);
    if (axis != static_cast<int64_t>(*rank) - 1) return std::nullopt;
    const Node* add = pm.producer(softmax.inputs[0], "Add", 2);
    if (!add || add->inputs.size() != 2) return std::nullopt;
    // The scores first when shape inference can tell them (the operand of the
    // sum's shape); the op broadcasts either way.
    OptShape sum = pm.shape(add->outputs[0]), b = pm.shape(add->inputs[1]);
    size_t x = sum && b && *b == *sum && !(pm.shape(add->inputs[0]) == sum) ? 1 : 0;
    if (x == 1) b = pm.shape(add->inputs[0]);
    auto type = pm.dtype(softmax.outputs[0]);
    if (!type || (*type != DType::kFloat && *type != DType::kDouble) || pm.dtype(add->inputs[1 - x]) != type)
      return std::nullopt;
    std::set<size_t> nodes = {pm.position(add), pm.position(&softmax)};
    if (!pm.closed(nodes, pm.position(&softmax))) return std::nullopt;
    Node fused = fused_node(pm.index(), softmax, "BiasSoftmax", {add->inputs[x], add->inputs[1 - x]}, {});
    pm.context().note(fmt::format("{}: Add of a {} bias, Softmax -> 1", fused.name, shape_to_string(b)));
    return FusedMatch{pm.position(&softmax), std::move(nodes), std::move(fused)};
  }
};

ORT_REGISTER_PASS(BiasSoftmaxFusion);

}  // namespace
}  // namespace ort_train
