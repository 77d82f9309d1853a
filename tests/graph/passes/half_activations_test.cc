// half_activations after autocast: a GEMM's 16-bit product feeds GELU,
// Dropout, views and the next GEMM in 16 bits; an op that also reads a
// float32 value (a residual Add), or one that must stay float32 (Softmax),
// reads the product through a Cast back. For GEMM -> GELU -> GEMM the outputs
// are bit for bit autocast's alone (its Casts rounded at the same places);
// a view of GELU's output is GELU's rounded to 16 bits.
#include "graph/op_schema.h"
#include "graph/passes/autocast.h"
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"
#include "numerics/float16.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// y = Softmax(Gelu(x @ w1) @ w2 + r) and z = Transpose(Gelu(x @ w1)) as graph outputs.
Model mlp() {
  Model m = empty_model();
  m.opset_imports.push_back({kOrtTrainDomain, 1});
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {4, 8});
  add_input(g, "r", DType::kFloat, {4, 5});
  add_initializer(g, "w1", random_tensor({8, 6}, 51));
  add_initializer(g, "w2", random_tensor({6, 5}, 52));
  g.nodes.push_back(node("fc1", "MatMul", {"x", "w1"}, {"p"}));
  g.nodes.push_back(node("act", "Gelu", {"p"}, {"h"}));
  g.nodes.back().domain = kOrtTrainDomain;
  g.nodes.push_back(node("fc2", "MatMul", {"h", "w2"}, {"q"}));
  g.nodes.push_back(node("residual", "Add", {"q", "r"}, {"s"}));
  g.nodes.push_back(node("softmax", "Softmax", {"s"}, {"y"}, {Attribute::make_int("axis", -1)}));
  g.nodes.push_back(node("view", "Transpose", {"h"}, {"z"}));
  add_output(g, "y");
  add_output(g, "z");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

const Node& producer(const Model& m, const std::string& value) {
  for (const Node& n : m.graph.nodes)
    for (const std::string& o : n.outputs)
      if (o == value) return n;
  FAIL("no node makes " << value);
  return m.graph.nodes.front();
}

const Node& by_name(const Model& m, const std::string& name) {
  for (const Node& n : m.graph.nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  return m.graph.nodes.front();
}

}  // namespace

TEST_CASE("half_activations: GELU and the next GEMM read the 16-bit product, a residual Add and Softmax stay float32",
          "[passes][autocast]") {
  for (DType low : {DType::kBFloat16, DType::kFloat16}) {
    Model autocast_only = mlp();
    apply_pass("autocast", autocast_only, {}, nullptr, false, low);
    Model m = autocast_only;
    int64_t changed = 0;
    apply_pass("half_activations", m, {}, &changed, false, low);
    CHECK(changed > 0);
    REQUIRE(infer_shapes(m).ok());
    const Node& act = by_name(m, "act");
    CHECK(m.graph.value(act.inputs[0])->dtype == low);
    CHECK(m.graph.value(act.outputs[0])->dtype == low);
    CHECK(producer(m, act.inputs[0]).name == "fc1");  // no Cast between the GEMM and GELU
    const Node& fc2 = by_name(m, "fc2");
    CHECK(fc2.inputs[0] == act.outputs[0]);  // nor between GELU and the next GEMM
    const Node& view = by_name(m, "view");
    CHECK(m.graph.value(view.inputs[0])->dtype == low);
    CHECK(producer(m, "z").op_type == "Cast");  // the graph output keeps its float32 type and name
    const Node& residual = by_name(m, "residual");
    CHECK(m.graph.value(residual.inputs[0])->dtype == DType::kFloat);  // bf16 + float32 promotes, as in PyTorch
    CHECK(producer(m, residual.inputs[0]).op_type == "Cast");
    CHECK(m.graph.value(by_name(m, "softmax").inputs[0])->dtype == DType::kFloat);
    // 2 Casts fewer than autocast alone: GEMM -> GELU's and GELU -> GEMM's.
    CHECK(count_op(m, "Cast") + 1 == count_op(autocast_only, "Cast"));  // + z's Cast back, - two
    std::map<std::string, Tensor> feeds{{"x", random_tensor({4, 8}, 53, -2.f, 2.f)}, {"r", random_tensor({4, 5}, 54)}};
    auto before = run_model(autocast_only, feeds), after = run_model(m, feeds);
    require_close(after.at("y"), before.at("y"), 0, 0);
    // z is GELU's output, now rounded to 16 bits before the view (PyTorch's
    // bfloat16 GELU output), where autocast alone kept its float32 value.
    Tensor rounded = before.at("z").clone();
    for (float& v : rounded.span<float>())
      v = low == DType::kBFloat16 ? static_cast<float>(BFloat16(v)) : static_cast<float>(Float16(v));
    require_close(after.at("z"), rounded, 0, 0);
  }
}

TEST_CASE("half_activations: nothing to do in float32, or without autocast's 16-bit products", "[passes][autocast]") {
  Model m = mlp();
  int64_t changed = 0;
  apply_pass("half_activations", m, {}, &changed, false, DType::kFloat);
  CHECK(changed == 0);
  apply_pass("half_activations", m, {}, &changed, false, DType::kBFloat16);  // no autocast ran: no 16-bit values
  CHECK(changed == 0);
  CHECK(count_op(m, "Cast") == 0);
}
