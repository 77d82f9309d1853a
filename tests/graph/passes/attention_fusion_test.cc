// attention_fusion on the exporters' scaled-dot-product attention: the
// product of q with k^T (a MatMul, or matmul_transpose_fusion's FusedMatMul),
// a scale, a Where on a bool mask (either branch), an additive mask, the
// Softmax, an attention Dropout and the product with v become one Attention
// that computes the same outputs; the pattern stays when something outside
// reads the probabilities or the Dropout's mode is not a constant.
#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

struct Spec {
  bool fill_when_true = false;   // Where(mask, fill, scores) instead of Where(mask, scores, fill)
  bool bias = true;              // + an additive [2, 1, 1, 7] mask
  bool dropout = true;           // a Dropout between Softmax and the product with v
  bool dropout_training = false; // its training_mode
  bool training_is_input = false;
  bool probs_are_output = false;
};

Model attention(const Spec& s) {
  Model m = empty_model();
  m.opset_imports = {{"", 17}};
  Graph& g = m.graph;
  add_input(g, "q", DType::kFloat, {2, 2, 6, 4});
  add_input(g, "kt", DType::kFloat, {2, 2, 4, 7});
  add_input(g, "v", DType::kFloat, {2, 2, 7, 3});
  add_input(g, "keep", DType::kBool, {1, 1, 6, 7});
  add_input(g, "pad", DType::kFloat, {2, 1, 1, 7});
  add_initializer(g, "two", make<float>({}, {2.f}));
  add_initializer(g, "fill", make<float>({}, {-1e9f}));
  add_initializer(g, "ratio", make<float>({}, {0.2f}));
  Tensor mode = Tensor::host(DType::kBool, {});
  mode.data<bool>()[0] = s.dropout_training;
  if (s.training_is_input) add_input(g, "mode", DType::kBool, {});
  else add_initializer(g, "mode", mode);
  g.nodes.push_back(node("attn/MatMul", "MatMul", {"q", "kt"}, {"qk"}));
  g.nodes.push_back(node("attn/Div", "Div", {"qk", "two"}, {"scaled"}));
  g.nodes.push_back(node("attn/Where", "Where",
                         s.fill_when_true ? std::vector<std::string>{"keep", "fill", "scaled"}
                                          : std::vector<std::string>{"keep", "scaled", "fill"},
                         {"filled"}));
  std::string x = "filled";
  if (s.bias) {
    g.nodes.push_back(node("attn/Add", "Add", {"filled", "pad"}, {"biased"}));
    x = "biased";
  }
  g.nodes.push_back(node("attn/Softmax", "Softmax", {x}, {"probs"}));
  std::string p = "probs";
  if (s.dropout) {
    g.nodes.push_back(node("attn/Dropout", "Dropout", {"probs", "ratio", "mode"}, {"dropped"}));
    p = "dropped";
  }
  g.nodes.push_back(node("attn/MatMul_1", "MatMul", {p, "v"}, {"y"}));
  add_output(g, "y");
  if (s.probs_are_output) add_output(g, "probs");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

std::map<std::string, Tensor> feeds() {
  Tensor keep = Tensor::host(DType::kBool, {1, 1, 6, 7});
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t j = 0; j < 7; ++j) keep.data<bool>()[t * 7 + j] = j <= t + 1;  // causal, one key ahead
  Tensor pad = make<float>({2, 1, 1, 7}, {0, 0, 0, 0, 0, -1e4f, -1e4f, 0, 0, 0, 0, 0, 0, -1e4f});
  std::map<std::string, Tensor> f = {{"q", random_tensor({2, 2, 6, 4}, 1, -2, 2)},
                                     {"kt", random_tensor({2, 2, 4, 7}, 2, -2, 2)},
                                     {"v", random_tensor({2, 2, 7, 3}, 3)},
                                     {"keep", keep},
                                     {"pad", pad}};
  return f;
}

}  // namespace

TEST_CASE("attention_fusion: the exported attention becomes one Attention with the same outputs", "[passes][fusion]") {
  for (Spec s : {Spec{}, Spec{.fill_when_true = true}, Spec{.bias = false, .dropout = false}}) {
    INFO("fill when true " << s.fill_when_true << ", bias " << s.bias << ", dropout " << s.dropout);
    Model m = attention(s);
    auto f = feeds();
    if (s.fill_when_true)  // the mask then marks what to fill
      for (bool& b : f["keep"].span<bool>()) b = !b;
    auto before = run_model(m, f);
    int64_t changed = 0;
    REQUIRE(apply_pass("attention_fusion", m, {}, &changed));
    REQUIRE(m.graph.nodes.size() == 1);
    const Node& n = m.graph.nodes[0];
    CHECK(n.op_type == "Attention");
    CHECK(n.domain == kOrtTrainDomain);
    CHECK(n.inputs[0] == "q");
    CHECK(n.inputs[1] == "kt");
    CHECK(n.inputs[2] == "v");
    CHECK(n.attr_int("k_transposed", 0) == 1);
    CHECK(n.attr_float("scale", 0) == 0.5f);
    CHECK(n.attr_int("mask_fill_when", -1) == (s.fill_when_true ? 1 : 0));
    CHECK(n.inputs[3] == (s.bias ? "pad" : ""));
    CHECK(n.inputs[4] == "keep");
    CHECK_FALSE(n.attr("dropout_ratio"));  // training_mode false: no dropout
    require_close(run_model(m, f).at("y"), before.at("y"), 1e-5, 1e-6);
  }
}

TEST_CASE("attention_fusion: a Dropout in training keeps its ratio and gets a seed", "[passes][fusion]") {
  Model m = attention({.dropout_training = true});
  REQUIRE(apply_pass("attention_fusion", m));
  REQUIRE(m.graph.nodes.size() == 1);
  CHECK(m.graph.nodes[0].attr_float("dropout_ratio", 0) == 0.2f);
  CHECK(m.graph.nodes[0].attr("seed"));
}

TEST_CASE("attention_fusion: probabilities read elsewhere, or a Dropout mode known only at run time, stay",
          "[passes][fusion]") {
  Model read = attention({.probs_are_output = true});
  REQUIRE_FALSE(apply_pass("attention_fusion", read));
  Model runtime_mode = attention({.training_is_input = true});
  REQUIRE_FALSE(apply_pass("attention_fusion", runtime_mode));
  CHECK(count_op(runtime_mode, "Attention") == 0);
}

// Grouped-query attention as Llama's repeat_kv writes it: each key/value head
// Unsqueezed at axis 2, Expanded n times and Reshaped to [B, H, S, D]. Where
// the shapes prove it, the Attention reads the unrepeated K and V (2 heads for
// 4 query heads) and computes the same outputs.
TEST_CASE("attention_fusion: repeated key/value heads are read unrepeated", "[passes][fusion]") {
  Model m = empty_model();
  m.opset_imports = {{"", 17}, {kOrtTrainDomain, 1}};
  Graph& g = m.graph;
  add_input(g, "q", DType::kFloat, {1, 4, 6, 4});
  add_input(g, "k", DType::kFloat, {1, 2, 7, 4});
  add_input(g, "v", DType::kFloat, {1, 2, 7, 3});
  add_initializer(g, "axis2", make<int64_t>({1}, {2}));
  add_initializer(g, "k_expanded", make<int64_t>({5}, {1, 2, 2, 7, 4}));
  add_initializer(g, "v_expanded", make<int64_t>({5}, {1, 2, 2, 7, 3}));
  add_initializer(g, "k_heads", make<int64_t>({4}, {1, 4, 7, 4}));
  add_initializer(g, "v_heads", make<int64_t>({4}, {1, 4, 7, 3}));
  for (const char* x : {"k", "v"}) {
    std::string s = x;
    g.nodes.push_back(node(s + "/Unsqueeze", "Unsqueeze", {s, "axis2"}, {s + "_u"}));
    g.nodes.push_back(node(s + "/Expand", "Expand", {s + "_u", s + "_expanded"}, {s + "_e"}));
    g.nodes.push_back(node(s + "/Reshape", "Reshape", {s + "_e", s + "_heads"}, {s + "_rep"}));
  }
  Node scores = node("attn/FusedMatMul", "FusedMatMul", {"q", "k_rep"}, {"scores"},
                     {Attribute::make_int("transB", 1), Attribute::make_float("alpha", 0.5f)});
  scores.domain = kOrtTrainDomain;
  g.nodes.push_back(scores);
  g.nodes.push_back(node("attn/Softmax", "Softmax", {"scores"}, {"probs"}));
  g.nodes.push_back(node("attn/MatMul_1", "MatMul", {"probs", "v_rep"}, {"y"}));
  add_output(g, "y");
  REQUIRE(infer_shapes(m).ok());
  std::map<std::string, Tensor> f = {{"q", random_tensor({1, 4, 6, 4}, 7, -2, 2)},
                                     {"k", random_tensor({1, 2, 7, 4}, 8, -2, 2)},
                                     {"v", random_tensor({1, 2, 7, 3}, 9)}};
  auto before = run_model(m, f);
  REQUIRE(apply_pass("attention_fusion", m));
  REQUIRE(m.graph.nodes.size() == 1);
  const Node& n = m.graph.nodes[0];
  CHECK(n.op_type == "Attention");
  CHECK(n.inputs == std::vector<std::string>{"q", "k", "v"});
  CHECK(n.attr_int("k_transposed", 0) == 0);
  require_close(run_model(m, f).at("y"), before.at("y"), 1e-5, 1e-6);
}
