// computation_reduction on an MLM head: SoftmaxCrossEntropyLoss over
// Reshape(h @ W + b, [-1, V]) with ignore_index reads only the labelled rows,
// gathered before the projection; the loss is the same bit for bit, and so
// are the logits when they are a model output too. Without ignore_index, or
// with the log-probabilities read, the head stays.
#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

struct Head {
  bool ignore_index = true;
  bool logits_output = false;
  bool log_prob_output = false;
  bool separate_add = false;  // MatMul + Add instead of a FusedMatMul with its bias
  std::string reduction = "mean";
};

Model mlm_head(const Head& s) {
  Model m = empty_model();
  m.opset_imports = {{"", 17}, {kOrtTrainDomain, 1}};
  Graph& g = m.graph;
  add_input(g, "h", DType::kFloat, {2, 3, 4});
  add_input(g, "labels", DType::kInt64, {2, 3});
  add_initializer(g, "W", random_tensor({4, 5}, 3));
  add_initializer(g, "b", random_tensor({5}, 4));
  add_initializer(g, "scores_shape", make<int64_t>({2}, {-1, 5}));
  add_initializer(g, "flat", make<int64_t>({1}, {-1}));
  if (s.separate_add) {
    g.nodes.push_back(node("head/MatMul", "MatMul", {"h", "W"}, {"hw"}));
    g.nodes.push_back(node("head/Add", "Add", {"b", "hw"}, {"logits"}));
  } else {
    Node fm = node("head/FusedMatMul", "FusedMatMul", {"h", "W", "b"}, {"logits"});
    fm.domain = kOrtTrainDomain;
    g.nodes.push_back(fm);
  }
  g.nodes.push_back(node("loss/Reshape", "Reshape", {"logits", "scores_shape"}, {"scores"}));
  g.nodes.push_back(node("loss/Reshape_1", "Reshape", {"labels", "flat"}, {"labels_flat"}));
  std::vector<Attribute> attrs = {Attribute::make_string("reduction", s.reduction)};
  if (s.ignore_index) attrs.push_back(Attribute::make_int("ignore_index", -100));
  std::vector<std::string> outs = {"loss"};
  if (s.log_prob_output) outs.push_back("log_prob");
  g.nodes.push_back(node("loss/SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLoss", {"scores", "labels_flat"}, outs,
                         attrs));
  add_output(g, "loss");
  if (s.logits_output) add_output(g, "logits");
  if (s.log_prob_output) add_output(g, "log_prob");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

std::map<std::string, Tensor> feeds() {
  return {{"h", random_tensor({2, 3, 4}, 5, -2, 2)}, {"labels", make<int64_t>({2, 3}, {-100, 3, -100, 0, -100, 4})}};
}

}  // namespace

TEST_CASE("computation_reduction: the loss reads only the labelled rows, bit for bit", "[passes]") {
  for (Head s : {Head{}, Head{.logits_output = true}, Head{.separate_add = true}, Head{.reduction = "sum"}}) {
    INFO("logits output " << s.logits_output << ", separate Add " << s.separate_add << ", " << s.reduction);
    Model m = mlm_head(s);
    auto before = run_model(m, feeds());
    int64_t changed = 0;
    REQUIRE(apply_pass("computation_reduction", m, {}, &changed));
    CHECK(changed == 1);
    CHECK(count_op(m, "NonZero") == 1);
    CHECK(count_op(m, "Gather") == 2);
    auto after = run_model(m, feeds());
    require_close(after.at("loss"), before.at("loss"), 0, 0);
    if (s.logits_output) require_close(after.at("logits"), before.at("logits"), 0, 0);
    // The loss's scores have one row per labelled position: 3 of 6.
    const Node* loss = nullptr;
    for (const Node& n : m.graph.nodes)
      if (n.op_type == "SoftmaxCrossEntropyLoss") loss = &n;
    REQUIRE(loss);
    CHECK(loss->inputs[0] != "scores");
  }
}

TEST_CASE("computation_reduction: no ignore_index, or log-probabilities read, leave the head alone", "[passes]") {
  Model plain = mlm_head({.ignore_index = false});
  REQUIRE_FALSE(apply_pass("computation_reduction", plain));
  Model log_prob = mlm_head({.log_prob_output = true});
  REQUIRE_FALSE(apply_pass("computation_reduction", log_prob));
}
