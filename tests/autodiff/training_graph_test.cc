// The training graph as a whole: trainable selection, frozen initializers,
// default losses, error listings, and the saved graph's round trip.
#include <algorithm>

#include <filesystem>

#include "autodiff/training_graph.h"
#include "graph/reachability.h"
#include "graph/onnx_io.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

Model mlp() {
  auto m = load_model(source_dir() + "/tests/models/mlp/model.onnx");
  REQUIRE(m.ok());
  return std::move(m).value();
}

ModelDescription mse_description() {
  auto d = parse_description(R"(
inputs: [{name: x, dtype: float32, shape: [batch, 32]}]
labels: [{name: labels, dtype: float32, shape: [batch, 10]}]
loss: {type: mse, input: logits, target: labels}
dims: {batch: 3}
)", "");
  REQUIRE(d.ok());
  return std::move(d).value();
}

std::map<std::string, Tensor> feeds() {
  return {{"x", random_tensor({3, 32}, 1)}, {"labels", random_tensor({3, 10}, 2)}};
}

}  // namespace

TEST_CASE("training_graph.frozen_initializers_get_no_gradient_nodes") {
  ModelDescription d = mse_description();
  d.trainable_exclude = {"fc1.*", "nothing.matches"};
  auto tg = build_training_graph(mlp(), d);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  CHECK(tg->frozen == std::vector<std::string>{"fc1.weight", "fc1.bias"});
  CHECK(tg->unused_globs == std::vector<std::string>{"nothing.matches"});
  CHECK(tg->gradients.trainable.size() == 4);
  CHECK_FALSE(tg->gradients.gradient.count("fc1.weight"));
  // No backward node reads fc1's output gradient into a weight gradient: the
  // first layer's Gemm gets no gradient rule nodes at all (its input x is fed).
  std::vector<size_t> forward = nodes_reaching(tg->model.graph, tg->eval_outputs);
  CHECK(forward.size() == forward_node_count(*tg));
  for (size_t i = 0; i < tg->model.graph.nodes.size(); ++i) {
    if (std::binary_search(forward.begin(), forward.end(), i)) continue;
    for (const std::string& in : tg->model.graph.nodes[i].inputs) CHECK(in != "x");
  }
}

TEST_CASE("training_graph.default_loss_and_errors") {
  ModelDescription none;
  auto tg = build_training_graph(mlp(), none);
  REQUIRE_FALSE(tg.ok());
  CHECK(tg.status().message().find("include no scalar loss") != std::string::npos);
  CHECK(tg.status().message().find("logits") != std::string::npos);
}

TEST_CASE("training_graph.saved_graph_round_trips") {
  auto tg = build_training_graph(mlp(), mse_description());
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  auto ex = Executor::create(tg->model);
  REQUIRE(ex.ok());
  RunOptions training;
  training.training = true;
  auto direct = (*ex)->run(feeds(), training);
  REQUIRE(direct.ok());

  fs::path dir = fs::temp_directory_path() / "ort_train_training_graph_test";
  fs::create_directories(dir);
  std::string path = (dir / "train.onnx").string();
  REQUIRE(save_model(tg->model, path).ok());
  auto loaded = load_model(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  REQUIRE(infer_shapes(*loaded, {.dim_values = {{"batch", 3}}}).ok());
  auto ex2 = Executor::create(*loaded);
  INFO(ex2.status().message());
  REQUIRE(ex2.ok());
  auto again = (*ex2)->run(feeds(), training);
  REQUIRE(again.ok());
  for (const auto& [w, g] : tg->gradients.gradient) {
    INFO(w);
    require_close(again->at(g), direct->at(g), 0, 0);  // bit for bit
  }
  fs::remove_all(dir);
}

}  // namespace ort_train::testing

namespace ort_train::testing {
namespace {
// A test-only op with a shape rule and a kernel but no gradient rule.
ORT_REGISTER_OP("test.no_gradient", "Opaque", 1, 1000, same_as_input0, kPlainOp);
}  // namespace

TEST_CASE("training_graph.every_node_without_a_rule_is_listed") {
  ModelDescription d = mse_description();
  Model m = mlp();
  // Route both hidden activations through the opaque op.
  for (Node& n : m.graph.nodes)
    if (n.op_type == "Relu") {
      n.op_type = "Opaque";
      n.domain = "test.no_gradient";
    }
  m.opset_imports.push_back({"test.no_gradient", 1});
  auto tg = build_training_graph(std::move(m), d);
  REQUIRE_FALSE(tg.ok());
  INFO(tg.status().message());
  CHECK(tg.status().code() == ErrorCode::kUnsupported);
  CHECK(tg.status().message().find("2 node(s)") != std::string::npos);
  CHECK(tg.status().message().find("test.no_gradient::Opaque") != std::string::npos);
}

}  // namespace ort_train::testing
