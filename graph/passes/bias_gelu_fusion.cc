// bias_gelu_fusion: GELU of a sum with a 1-D bias along the last dim, as a
// Linear layer before its activation exports (BERT's intermediate dense and
// MLM-head transform: MatMul, Add of the bias, then the GELU that gelu_fusion
// made), becomes one com.ort_train BiasGelu(X, B): the bias is added to each
// row while GELU reads it, instead of an Add writing a tensor the GELU reads
// back; the backward's BiasGeluGrad forms the sum again instead of keeping
// it. ONNX Runtime's BiasGeluFusion. It runs before matmul_add_fusion, which
// would otherwise take the bias into the GEMM.
//
// Exact, so on by default: the Add's float sum and Gelu's arithmetic, forward
// and backward; the bias's gradient is summed over the rows as Add's was.
#include <fmt/format.h>

#include "graph/op_schema.h"
#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

class BiasGeluFusion : public FusionPass {
 public:
  std::string name() const override { return "bias_gelu_fusion"; }

  std::optional<FusedMatch> match(const Node& gelu, PatternMatcher& pm) override {
    bool ours = gelu.op_type == "Gelu" && gelu.domain == kOrtTrainDomain;
    if ((!ours && (gelu.op_type != "Gelu" || !gelu.domain.empty())) || gelu.inputs.size() != 1) return std::nullopt;
    const Node* add = pm.producer(gelu.inputs[0], "Add", 2);
    if (!add || add->inputs.size() != 2) return std::nullopt;
    for (size_t k = 0; k < 2; ++k) {
      const std::string &x = add->inputs[k], &bias = add->inputs[1 - k];
      OptShape xs = pm.shape(x), bs = pm.shape(bias), sum = pm.shape(add->outputs[0]);
      if (!xs || !bs || !sum || xs->empty() || bs->size() != 1 || !xs->back().known() ||
          !(bs->front() == xs->back()) || xs->size() != sum->size())
        continue;
      auto type = pm.dtype(x);
      if (!type || (*type != DType::kFloat && *type != DType::kDouble) || pm.dtype(bias) != type) continue;
      std::set<size_t> nodes = {pm.position(add), pm.position(&gelu)};
      if (!pm.closed(nodes, pm.position(&gelu))) continue;
      Node fused = fused_node(pm.index(), gelu, "BiasGelu", {x, bias},
                              {Attribute::make_string("approximate", gelu.attr_string("approximate", "none"))});
      pm.context().note(fmt::format("{}: Add of a [{}] bias, Gelu -> 1", fused.name, xs->back().value));
      return FusedMatch{pm.position(&gelu), std::move(nodes), std::move(fused)};
    }
    return std::nullopt;
  }
};

ORT_REGISTER_PASS(BiasGeluFusion);

}  // namespace
}  // namespace ort_train
