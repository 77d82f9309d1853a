// dropout_add_fusion: a Dropout whose output only a residual Add reads,
// Dropout(X) + R (BERT's and GPT-2's hidden and attention output dropouts
// before the residual; the op broadcasts as Add does), becomes one com.ort_train
// DropoutAdd(X, R, ratio, training_mode): one pass over the elements draws
// the mask, scales and adds, instead of a Dropout writing a tensor the Add
// reads back. ONNX Runtime's BiasDropoutFusion without the bias, which
// matmul_add_fusion has already put into the GEMM.
//
// On by default: the same mask arithmetic and the same float addition. (As
// with any rewrite before a Dropout, the node's place in the graph seeds its
// mask, so a run with and without the pass draws different masks; with
// Dropout off the values are equal bit for bit.) The mask output stays where
// the Dropout had one; the gradient is Dropout's for X and dY for R.
#include <fmt/format.h>

#include "graph/op_schema.h"
#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

class DropoutAddFusion : public FusionPass {
 public:
  std::string name() const override { return "dropout_add_fusion"; }

  std::optional<FusedMatch> match(const Node& add, PatternMatcher& pm) override {
    if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2) return std::nullopt;
    for (size_t k = 0; k < 2; ++k) {
      const Node* dropout = pm.producer(add.inputs[k], "Dropout", 1);
      if (!dropout || dropout->outputs.empty() || dropout->outputs[0] != add.inputs[k]) continue;
      const std::string& x = dropout->inputs[0];
      const std::string& residual = add.inputs[1 - k];
      auto type = pm.dtype(x);
      if (!type || (*type != DType::kFloat && *type != DType::kDouble) || pm.dtype(residual) != type) continue;
      std::set<size_t> nodes = {pm.position(dropout), pm.position(&add)};
      if (!pm.only_read_by(dropout->outputs[0], nodes)) continue;
      // The fused node takes the Add's place: a mask reader before it would read it too early.
      bool mask_read_early = false;
      if (dropout->outputs.size() > 1 && !dropout->outputs[1].empty())
        for (const GraphIndex::Use& u : pm.index().consumers(dropout->outputs[1]))
          mask_read_early = mask_read_early || u.node < pm.position(&add);
      if (mask_read_early) continue;
      std::vector<std::string> inputs = {x, residual};
      std::vector<Attribute> attrs;
      if (pm.opset() >= 12) {
        inputs.push_back(dropout->inputs.size() > 1 ? dropout->inputs[1] : "");
        inputs.push_back(dropout->inputs.size() > 2 ? dropout->inputs[2] : "");
        while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
      } else {
        attrs = {Attribute::make_int("runtime_training", 1),
                 Attribute::make_float("ratio", dropout->attr_float("ratio", 0.5f))};
      }
      if (const Attribute* seed = dropout->attr("seed")) attrs.push_back(*seed);
      Node fused = fused_node(pm.index(), add, "DropoutAdd", std::move(inputs), std::move(attrs));
      if (dropout->outputs.size() > 1 && !dropout->outputs[1].empty()) fused.outputs.push_back(dropout->outputs[1]);
      pm.context().note(fmt::format("{}: Dropout, residual Add -> 1", fused.name));
      return FusedMatch{pm.position(&add), std::move(nodes), std::move(fused)};
    }
    return std::nullopt;
  }
};

ORT_REGISTER_PASS(DropoutAddFusion);

}  // namespace
}  // namespace ort_train
