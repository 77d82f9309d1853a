// matmul_add_fusion: a Linear layer as exporters spell it for inputs of rank
// 3 and more, MatMul(X, W) then Add with a 1-D bias of the product's last
// dim (in either operand order), becomes one com.ort_train FusedMatMul whose
// third input is the bias: the kernel adds it to the GEMM's output rows as
// an epilogue, while they are still in cache, instead of a separate node
// writing a second [.., N] tensor. It also takes a FusedMatMul the scale and
// transpose fusions made, so it runs after them.
//
// Exact, so on by default: the epilogue is the same float addition the Add
// did, after the whole product (not the GEMM's beta = 1 accumulation, whose
// rounding differs). The bias's gradient is dY summed to [N], as Add's was.
#include <fmt/format.h>

#include "graph/op_schema.h"
#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

bool is_product(const Node& n) {
  if (n.op_type == "MatMul" && n.domain.empty()) return n.inputs.size() == 2;
  return n.op_type == "FusedMatMul" && n.domain == kOrtTrainDomain && n.inputs.size() == 2;
}

class MatMulAddFusion : public FusionPass {
 public:
  std::string name() const override { return "matmul_add_fusion"; }
  // It takes the FusedMatMuls the scale and transpose fusions made, and leaves
  // a GELU's bias to bias_gelu_fusion.
  PassOrder order() const override {
    return {.after = {"bias_gelu_fusion", "matmul_scale_fusion", "matmul_transpose_fusion"}};
  }

  std::optional<FusedMatch> match(const Node& add, PatternMatcher& pm) override {
    if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2) return std::nullopt;
    const Graph& g = pm.graph();
    for (size_t k = 0; k < 2; ++k) {
      auto p = pm.index().producer(add.inputs[k]);
      if (!p || pm.claimed().count(*p) || !is_product(g.nodes[*p])) continue;
      const Node& mm = g.nodes[*p];
      const std::string& bias = add.inputs[1 - k];
      OptShape out = pm.shape(mm.outputs[0]), b = pm.shape(bias);
      auto ra = pm.rank(mm.inputs[0]), rb = pm.rank(mm.inputs[1]);
      auto type = pm.dtype(mm.outputs[0]);
      if (!out || !b || !ra || !rb || *ra < 2 || *rb < 2 || b->size() != 1 || out->empty()) continue;
      if (!out->back().known() || !(b->front() == out->back())) continue;
      if (!type || (*type != DType::kFloat && *type != DType::kDouble) || pm.dtype(bias) != type) continue;
      std::set<size_t> nodes = {*p, pm.position(&add)};
      if (!pm.closed(nodes, pm.position(&add))) continue;
      std::vector<Attribute> attrs = {Attribute::make_int("transA", mm.attr_int("transA", 0)),
                                      Attribute::make_int("transB", mm.attr_int("transB", 0)),
                                      Attribute::make_float("alpha", mm.attr_float("alpha", 1.f))};
      Node fused = fused_node(pm.index(), add, "FusedMatMul", {mm.inputs[0], mm.inputs[1], bias}, std::move(attrs));
      pm.context().note(fmt::format("{}: {}, Add of a [{}] bias -> 1", fused.name, mm.op_type, out->back().value));
      return FusedMatch{pm.position(&add), std::move(nodes), std::move(fused)};
    }
    return std::nullopt;
  }
};

ORT_REGISTER_PASS(MatMulAddFusion);

}  // namespace
}  // namespace ort_train
