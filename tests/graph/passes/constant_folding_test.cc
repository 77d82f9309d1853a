// constant_folding: folds constant subgraphs into initializers under the same
// names, keeps outputs' values, and leaves alone what must stay: frozen
// (trainable) initializers, overridable ones, random and training-step ops,
// huge results, nodes the evaluator cannot run.
#include "graph/passes/op_traits.h"
#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// y = x + (a + b) * Constant(2); a, b initializers.
Model folding_chain() {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 3});
  add_initializer(g, "a", make<float>({3}, {1, 2, 3}));
  add_initializer(g, "b", make<float>({3}, {10, 20, 30}));
  g.nodes.push_back(node("sum", "Add", {"a", "b"}, {"c"}));
  g.nodes.push_back(node("two", "Constant", {}, {"k"}, {Attribute::make_tensor("value", Tensor::scalar_f32(2.f))}));
  g.nodes.push_back(node("scale", "Mul", {"c", "k"}, {"d"}));
  g.nodes.push_back(node("out", "Add", {"x", "d"}, {"y"}));
  add_output(g, "y");
  return m;
}

std::map<std::string, Tensor> x_feed() { return {{"x", make<float>({2, 3}, {1, 1, 1, 2, 2, 2})}}; }

}  // namespace

TEST_CASE("constant folding: a constant chain becomes one initializer", "[passes][constant_folding]") {
  Model m = folding_chain();
  auto before = run_model(m, x_feed());
  int64_t changed = 0;
  REQUIRE(apply_pass("constant_folding", m, {}, &changed));
  REQUIRE(changed == 3);  // Add, Constant and Mul, in one application
  REQUIRE(m.graph.nodes.size() == 1);
  REQUIRE(m.graph.nodes[0].name == "out");
  REQUIRE(m.graph.nodes[0].inputs == std::vector<std::string>{"x", "d"});  // same name, now an initializer
  REQUIRE(m.graph.is_initializer("d"));
  require_close(m.graph.initializers.at("d"), make<float>({3}, {22, 44, 66}));
  REQUIRE(m.graph.value("d")->dtype == DType::kFloat);
  REQUIRE(shape_to_string(m.graph.value("d")->shape) == "[3]");
  REQUIRE(std::count(m.graph.initializer_order.begin(), m.graph.initializer_order.end(), "d") == 1);
  require_same_outputs(run_model(m, x_feed()), before);
  // Nothing left to fold.
  REQUIRE_FALSE(apply_pass("constant_folding", m, {}, &changed));
  REQUIRE(changed == 0);
}

TEST_CASE("constant folding: a frozen (trainable) initializer is never folded", "[passes][constant_folding]") {
  Model m = folding_chain();
  auto before = run_model(m, x_feed());
  int64_t changed = 0;
  REQUIRE(apply_pass("constant_folding", m, {"a"}, &changed));
  REQUIRE(changed == 1);  // only the Constant node: everything downstream reads 'a'
  REQUIRE(m.graph.nodes.size() == 3);
  REQUIRE(count_op(m, "Constant") == 0);
  REQUIRE(m.graph.is_initializer("k"));
  REQUIRE_FALSE(m.graph.is_initializer("c"));
  REQUIRE_FALSE(m.graph.is_initializer("d"));
  // The frozen value itself is untouched.
  require_close(m.graph.initializers.at("a"), make<float>({3}, {1, 2, 3}));
  require_same_outputs(run_model(m, x_feed()), before);
}

TEST_CASE("constant folding: an initializer listed as a graph input is not a constant", "[passes][constant_folding]") {
  Model m = folding_chain();
  add_input(m.graph, "b", DType::kFloat, {3});  // a feed may override it
  REQUIRE(apply_pass("constant_folding", m));   // the Constant still folds
  REQUIRE(m.graph.nodes.size() == 3);
  REQUIRE_FALSE(m.graph.is_initializer("c"));
}

TEST_CASE("constant folding: a folded graph output becomes an initializer", "[passes][constant_folding]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_initializer(g, "a", make<int64_t>({2}, {4, 5}));
  g.nodes.push_back(node("shape", "Shape", {"a"}, {"s"}));
  g.nodes.push_back(node("neg", "Neg", {"a"}, {"y"}));
  add_output(g, "s");
  add_output(g, "y");
  auto before = run_model(m);
  REQUIRE(apply_pass("constant_folding", m));
  REQUIRE(m.graph.nodes.empty());
  REQUIRE(m.graph.outputs[0].name == "s");
  require_close(m.graph.initializers.at("s"), make<int64_t>({1}, {2}));
  require_close(m.graph.initializers.at("y"), make<int64_t>({2}, {-4, -5}));
  require_same_outputs(run_model(m), before);
}

TEST_CASE("constant folding: random and run-dependent ops are not folded", "[passes][constant_folding]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_initializer(g, "a", make<float>({4}, {1, 2, 3, 4}));
  add_initializer(g, "ratio", make<float>({}, {0.5f}));
  add_initializer(g, "on", make<bool>({}, {true}));
  g.nodes.push_back(node("drop", "Dropout", {"a", "ratio", "on"}, {"d", "mask"}));
  g.nodes.push_back(node("grad", "DropoutGrad", {"a", "mask", "ratio", "on"}, {"dg"}));
  g.nodes.back().domain = kOrtTrainDomain;
  m.opset_imports.push_back({kOrtTrainDomain, 1});
  add_output(g, "d");
  add_output(g, "dg");
  int64_t changed = 0;
  REQUIRE_FALSE(apply_pass("constant_folding", m, {}, &changed));
  REQUIRE(changed == 0);
  REQUIRE(m.graph.nodes.size() == 2);

  Node random = node("r", "RandomUniformLike", {"a"}, {"u"});
  REQUIRE_FALSE(is_foldable_op(random));
  REQUIRE_FALSE(is_foldable_op(node("m", "Multinomial", {"a"}, {"u"})));
  REQUIRE_FALSE(is_foldable_op(node("n", "RandomNormal", {}, {"u"})));
  Node bn = node("bn", "BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y", "rm", "rv"},
                 {Attribute::make_int("training_mode", 1)});
  REQUIRE_FALSE(is_foldable_op(bn));
  bn.attributes.clear();
  REQUIRE(is_foldable_op(bn));
  REQUIRE(is_foldable_op(node("add", "Add", {"a", "a"}, {"u"})));
}

TEST_CASE("constant folding: training state read by a training-step op stays variable", "[passes][constant_folding]") {
  // BatchNormalization in training mode writes back its running mean: a node
  // reading that initializer must not see today's value baked in.
  Model m = empty_model();
  Graph& g = m.graph;
  m.opset_imports = {{"", 15}};
  add_input(g, "x", DType::kFloat, {2, 1, 2});
  add_initializer(g, "scale", make<float>({1}, {1}));
  add_initializer(g, "bias", make<float>({1}, {0}));
  add_initializer(g, "mean", make<float>({1}, {0}));
  add_initializer(g, "var", make<float>({1}, {1}));
  g.nodes.push_back(node("bn", "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y", "rm", "rv"},
                         {Attribute::make_int("training_mode", 1)}));
  g.nodes.push_back(node("neg_mean", "Neg", {"mean"}, {"nm"}));
  add_initializer(g, "other", make<float>({1}, {7}));
  g.nodes.push_back(node("neg_other", "Neg", {"other"}, {"no"}));
  for (const char* o : {"y", "rm", "rv", "nm", "no"}) add_output(g, o);
  int64_t changed = 0;
  REQUIRE(apply_pass("constant_folding", m, {}, &changed));
  REQUIRE(changed == 1);  // only Neg(other): Neg(mean) reads the statistics BatchNormalization updates
  REQUIRE(m.graph.nodes.size() == 2);
  REQUIRE(m.graph.nodes[1].name == "neg_mean");
  REQUIRE(m.graph.is_initializer("no"));
}

TEST_CASE("constant folding: huge results are left for run time", "[passes][constant_folding]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_initializer(g, "big_shape", make<int64_t>({2}, {5000, 5000}));  // 25M elements: over the 16M cap
  add_initializer(g, "small_shape", make<int64_t>({2}, {4, 4}));
  g.nodes.push_back(node("big", "ConstantOfShape", {"big_shape"}, {"big_value"}));
  g.nodes.push_back(node("small", "ConstantOfShape", {"small_shape"}, {"small_value"}));
  add_output(g, "big_value");
  add_output(g, "small_value");
  int64_t changed = 0;
  REQUIRE(apply_pass("constant_folding", m, {}, &changed));
  REQUIRE(changed == 1);
  REQUIRE(m.graph.nodes.size() == 1);
  REQUIRE(m.graph.nodes[0].name == "big");
  REQUIRE(m.graph.initializers.at("small_value").numel() == 16);
}

TEST_CASE("constant folding: a node the evaluator cannot run stays", "[passes][constant_folding]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_initializer(g, "a", make<float>({3}, {1, 2, 3}));
  add_initializer(g, "bad_shape", make<int64_t>({1}, {2}));  // 3 elements cannot become 2
  g.nodes.push_back(node("reshape", "Reshape", {"a", "bad_shape"}, {"r"}));
  g.nodes.push_back(node("unknown", "NoSuchOp", {"a"}, {"u"}));
  add_output(g, "r");
  add_output(g, "u");
  int64_t changed = 0;
  REQUIRE_FALSE(apply_pass("constant_folding", m, {}, &changed));
  REQUIRE(changed == 0);
  REQUIRE(m.graph.nodes.size() == 2);
}

TEST_CASE("constant folding: folded views own their storage", "[passes][constant_folding]") {
  // Reshape aliases its input in the kernel; the folded initializer must not
  // share bytes with the source, which may later change or be dropped.
  Model m = empty_model();
  Graph& g = m.graph;
  add_initializer(g, "a", make<float>({2, 2}, {1, 2, 3, 4}));
  add_initializer(g, "flat", make<int64_t>({1}, {4}));
  g.nodes.push_back(node("reshape", "Reshape", {"a", "flat"}, {"r"}));
  add_output(g, "r");
  add_output(g, "a");
  REQUIRE(apply_pass("constant_folding", m));
  REQUIRE(m.graph.initializers.at("r").raw() != m.graph.initializers.at("a").raw());
  require_close(m.graph.initializers.at("r"), make<float>({4}, {1, 2, 3, 4}));
}

// LoRA on an nn.Linear export: Transpose(W) folds for every frozen weight,
// and each W must go as its copy is made, not at the next
// dead_code_elimination, or the peak holds the weights twice.
TEST_CASE("constant folding: an initializer goes with its last folded reader", "[passes][constant_folding]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 2});
  add_initializer(g, "w", make<float>({2, 2}, {1, 2, 3, 4}));       // read by a Transpose only: goes
  add_initializer(g, "shared", make<float>({2, 2}, {5, 6, 7, 8}));  // also read at run time: stays
  add_initializer(g, "out_init", make<float>({2, 2}, {9, 9, 9, 9}));  // a graph output: stays
  g.nodes.push_back(node("tw", "Transpose", {"w"}, {"wt"}, {Attribute::make_ints("perm", {1, 0})}));
  g.nodes.push_back(node("ts", "Transpose", {"shared"}, {"st"}, {Attribute::make_ints("perm", {1, 0})}));
  g.nodes.push_back(node("to", "Transpose", {"out_init"}, {"ot"}, {Attribute::make_ints("perm", {1, 0})}));
  g.nodes.push_back(node("mw", "MatMul", {"x", "wt"}, {"y1"}));
  g.nodes.push_back(node("ms", "MatMul", {"x", "st"}, {"y2"}));
  g.nodes.push_back(node("mo", "MatMul", {"x", "ot"}, {"y3"}));
  g.nodes.push_back(node("direct", "Add", {"x", "shared"}, {"y4"}));
  for (const char* y : {"y1", "y2", "y3", "y4", "out_init"}) add_output(g, y);
  const std::map<std::string, Tensor> feed{{"x", make<float>({2, 2}, {1, -1, 2, 0.5f})}};
  auto before = run_model(m, feed);
  std::weak_ptr<Storage> w_storage = g.initializers.at("w").storage();
  REQUIRE(apply_pass("constant_folding", m, {}));
  REQUIRE_FALSE(g.is_initializer("w"));
  REQUIRE(g.value("w") == nullptr);
  REQUIRE(std::count(g.initializer_order.begin(), g.initializer_order.end(), "w") == 0);
  REQUIRE(w_storage.expired());  // freed by the pass itself
  REQUIRE(g.is_initializer("shared"));
  REQUIRE(g.is_initializer("out_init"));
  for (const char* folded : {"wt", "st", "ot"}) REQUIRE(g.is_initializer(folded));
  require_same_outputs(run_model(m, feed), before);
}
