// matmul_transpose_fusion: a MatMul (or FusedMatMul) reading an operand
// through a Transpose that swaps its last two dims, as attention's
// q @ k.transpose(-1, -2) and the MatMul gradient's B^T do, becomes one
// com.ort_train FusedMatMul with transA/transB set: the GEMM reads the operand
// transposed in place instead of a copy being made every step. Exact: the
// same products and sums, in the GEMM's own order.
#include <fmt/format.h>

#include "graph/op_schema.h"
#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

// The Transpose feeding `value` when it swaps only the last two dims of a
// rank >= 2 tensor and nothing else takes it.
const Node* swap_of_last_two(PatternMatcher& pm, const std::string& value) {
  const Node* t = pm.producer(value, "Transpose", 1);
  if (!t) return nullptr;
  auto rank = pm.rank(t->inputs[0]);
  if (!rank || *rank < 2) return nullptr;
  std::vector<int64_t> perm = t->attr_ints("perm");
  if (perm.empty()) return *rank == 2 ? t : nullptr;  // the default reverses the dims
  size_t r = perm.size();
  if (r != *rank) return nullptr;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != static_cast<int64_t>(i)) return nullptr;
  return perm[r - 2] == static_cast<int64_t>(r - 1) && perm[r - 1] == static_cast<int64_t>(r - 2) ? t : nullptr;
}

class MatMulTransposeFusion : public FusionPass {
 public:
  std::string name() const override { return "matmul_transpose_fusion"; }

  std::optional<FusedMatch> match(const Node& mm, PatternMatcher& pm) override {
    bool fused_mm = mm.op_type == "FusedMatMul" && mm.domain == kOrtTrainDomain;
    if (!fused_mm && (mm.op_type != "MatMul" || !mm.domain.empty() || mm.inputs.size() != 2)) return std::nullopt;
    if (fused_mm && mm.inputs.size() != 2 && mm.inputs.size() != 3) return std::nullopt;  // a bias stays
    auto ra = pm.rank(mm.inputs[0]), rb = pm.rank(mm.inputs[1]);
    auto type = pm.dtype(mm.outputs[0]);
    if (!ra || !rb || *ra < 2 || *rb < 2 || !type || (*type != DType::kFloat && *type != DType::kDouble))
      return std::nullopt;
    bool trans[2] = {mm.attr_int("transA", 0) != 0, mm.attr_int("transB", 0) != 0};
    std::vector<std::string> inputs = mm.inputs;
    std::set<size_t> nodes = {pm.position(&mm)};
    for (size_t k = 0; k < 2; ++k) {
      const Node* t = swap_of_last_two(pm, mm.inputs[k]);
      if (!t) continue;
      inputs[k] = t->inputs[0];
      trans[k] = !trans[k];
      nodes.insert(pm.position(t));
    }
    if (nodes.size() == 1 || !pm.closed(nodes, pm.position(&mm))) return std::nullopt;
    Node fused = fused_node(pm.index(), mm, "FusedMatMul", inputs,
                            {Attribute::make_int("transA", trans[0]), Attribute::make_int("transB", trans[1]),
                             Attribute::make_float("alpha", mm.attr_float("alpha", 1.f))});
    pm.context().note(fmt::format("{}: {}, {} Transpose -> 1", fused.name, mm.op_type, nodes.size() - 1));
    return FusedMatch{pm.position(&mm), std::move(nodes), std::move(fused)};
  }
};

ORT_REGISTER_PASS(MatMulTransposeFusion);

}  // namespace
}  // namespace ort_train
