// matmul_scale_fusion: a MatMul whose product is then scaled by a constant,
// (A @ B) / c or (A @ B) * c, becomes one com.ort_train FusedMatMul with the
// scale as the GEMM's alpha: attention's scores / sqrt(head_dim) stop being a
// separate pass over the B x H x T x T scores, forward and backward.
//
// Exact by construction, so on by default: only a power-of-two c is folded
// (head_dim 64 gives 8), since scaling by a power of two rounds nothing, in
// whichever order it happens; x / 11.31 and x * (1 / 11.31) can differ in the
// last bit, so such a Div stays. It runs before matmul_transpose_fusion, which
// folds Transposes into the FusedMatMuls this pass makes.
#include <fmt/format.h>

#include <cmath>

#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

bool power_of_two(double c) {
  int exponent = 0;
  return std::isfinite(c) && c != 0 && std::fabs(std::frexp(c, &exponent)) == 0.5;
}

class MatMulScaleFusion : public FusionPass {
 public:
  std::string name() const override { return "matmul_scale_fusion"; }

  std::optional<FusedMatch> match(const Node& scale, PatternMatcher& pm) override {
    bool div = scale.op_type == "Div";
    if ((!div && scale.op_type != "Mul") || !scale.domain.empty() || scale.inputs.size() != 2) return std::nullopt;
    const Node* mm = nullptr;
    double c = 0;
    for (size_t k = 0; k < (div ? 1 : 2) && !mm; ++k) {
      const Node* p = pm.producer(scale.inputs[k], "MatMul", 2);
      auto v = p ? pm.scalar(scale.inputs[1 - k]) : std::nullopt;
      if (!v || !power_of_two(*v)) continue;
      mm = p;
      c = *v;
    }
    if (!mm) return std::nullopt;
    auto ra = pm.rank(mm->inputs[0]), rb = pm.rank(mm->inputs[1]);
    auto type = pm.dtype(mm->outputs[0]);
    if (!ra || !rb || *ra < 2 || *rb < 2 || !type || (*type != DType::kFloat && *type != DType::kDouble))
      return std::nullopt;
    std::set<size_t> nodes = {pm.position(mm), pm.position(&scale)};
    if (!pm.closed(nodes, pm.position(&scale))) return std::nullopt;
    Node fused = fused_node(pm.index(), scale, "FusedMatMul", {mm->inputs[0], mm->inputs[1]},
                            {Attribute::make_float("alpha", static_cast<float>(div ? 1.0 / c : c))});
    pm.context().note(fmt::format("{}: MatMul, {} by {} -> 1", fused.name, scale.op_type, c));
    return FusedMatch{pm.position(&scale), std::move(nodes), std::move(fused)};
  }
};

ORT_REGISTER_PASS(MatMulScaleFusion);

}  // namespace
}  // namespace ort_train
