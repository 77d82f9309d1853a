// bias_softmax_fusion on attention's masked softmax, Softmax(scores + mask):
// both operand orders and both axis semantics (opset 11's axis = last dim,
// opset 13's default) become one BiasSoftmax with bit-identical values; a
// softmax over another axis, opset 11's default axis, and a sum needed
// elsewhere are left alone.
#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

struct Masked {
  int64_t opset = 17;
  std::optional<int64_t> axis;  // Softmax's attribute; none: the opset's default
  bool mask_first = false;
  bool sum_is_output = false;
};

// y = Softmax(scores + mask) over [2, 3, 4, 5] scores and a [2, 1, 1, 5] mask.
Model masked_softmax(const Masked& s) {
  Model m = empty_model();
  m.opset_imports = {{"", s.opset}};
  Graph& g = m.graph;
  add_input(g, "scores", DType::kFloat, {2, 3, 4, 5});
  add_input(g, "mask", DType::kFloat, {2, 1, 1, 5});
  g.nodes.push_back(node("attn/Add", "Add", s.mask_first ? std::vector<std::string>{"mask", "scores"}
                                                         : std::vector<std::string>{"scores", "mask"},
                         {"sum"}));
  std::vector<Attribute> attrs;
  if (s.axis) attrs.push_back(Attribute::make_int("axis", *s.axis));
  g.nodes.push_back(node("attn/Softmax", "Softmax", {"sum"}, {"y"}, attrs));
  add_output(g, "y");
  if (s.sum_is_output) add_output(g, "sum");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

std::map<std::string, Tensor> feeds() {
  Tensor mask = random_tensor({2, 1, 1, 5}, 22, -1.f, 1.f);
  mask.data<float>()[3] = -1e9f;  // a masked-out key, as exporters write the padding mask
  return {{"scores", random_tensor({2, 3, 4, 5}, 21, -4.f, 4.f)}, {"mask", mask}};
}

}  // namespace

TEST_CASE("bias_softmax_fusion: Softmax(scores + mask) becomes one BiasSoftmax, bit for bit", "[passes][fusion]") {
  for (Masked s : {Masked{}, Masked{.mask_first = true}, Masked{.opset = 11, .axis = 3},
                   Masked{.opset = 11, .axis = -1, .mask_first = true}, Masked{.opset = 13, .axis = 3}}) {
    INFO("opset " << s.opset << ", mask first: " << s.mask_first);
    Model m = masked_softmax(s);
    auto before = run_model(m, feeds());
    int64_t changed = 0;
    REQUIRE(apply_pass("bias_softmax_fusion", m, {}, &changed));
    CHECK(changed == 1);
    REQUIRE(m.graph.nodes.size() == 1);
    const Node& n = m.graph.nodes[0];
    CHECK(n.op_type == "BiasSoftmax");
    CHECK(n.domain == kOrtTrainDomain);
    CHECK(n.inputs == std::vector<std::string>{"scores", "mask"});
    require_close(run_model(m, feeds()).at("y"), before.at("y"), 0, 0);
  }
}

TEST_CASE("bias_softmax_fusion: another axis, or a sum needed elsewhere, stays", "[passes][fusion]") {
  Model inner_axis = masked_softmax({.axis = 2});
  REQUIRE_FALSE(apply_pass("bias_softmax_fusion", inner_axis));
  Model old_default = masked_softmax({.opset = 11});  // axis 1: everything from dim 1 on
  REQUIRE_FALSE(apply_pass("bias_softmax_fusion", old_default));
  Model needed = masked_softmax({.sum_is_output = true});
  REQUIRE_FALSE(apply_pass("bias_softmax_fusion", needed));
}
