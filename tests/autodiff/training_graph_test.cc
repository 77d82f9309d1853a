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
  d.trainable.exclude = {"fc1.*", "nothing.matches"};
  auto tg = build_training_graph(mlp(), d);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  CHECK(tg->selection.frozen == std::vector<std::string>{"fc1.weight", "fc1.bias"});
  CHECK(tg->selection.unused_globs == std::vector<std::string>{"nothing.matches"});
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

namespace ort_train::testing {

// embeddings: {table: {padding_idx: k}}: lookups of row k add nothing to its
// gradient (torch.nn.Embedding(padding_idx)); the other rows are unchanged.
TEST_CASE("training_graph.a_padding_row_gets_no_gradient_from_lookups") {
  auto gradient = [](const std::string& embeddings) {
    Model m;
    m.opset_imports.push_back({"", 17});
    Graph& g = m.graph;
    g.initializers["table"] = random_tensor({4, 3}, 5);
    g.initializer_order.push_back("table");
    g.inputs.push_back(ValueInfo{"ids", DType::kInt64, Shape{Dim(int64_t{2}), Dim(int64_t{3})}});
    g.outputs.push_back(ValueInfo{"rows", DType::kFloat, std::nullopt});
    Node n;
    n.name = "lookup";
    n.op_type = "Gather";
    n.inputs = {"table", "ids"};
    n.outputs = {"rows"};
    g.nodes.push_back(n);
    auto d = parse_description("labels: [{name: target, dtype: float32, shape: [2, 3, 3]}]\n"
                               "loss: {type: mse, input: rows, target: target}\n" + embeddings, "");
    INFO(d.status().message());
    REQUIRE(d.ok());
    auto tg = build_training_graph(std::move(m), *d);
    INFO(tg.status().message());
    REQUIRE(tg.ok());
    auto ex = Executor::create(tg->model);
    REQUIRE(ex.ok());
    RunOptions training;
    training.training = true;
    auto out = (*ex)->run({{"ids", make<int64_t>({2, 3}, {0, 2, 0, 3, -4, 2})}, {"target", random_tensor({2, 3, 3}, 6)}},
                          training);
    REQUIRE(out.ok());
    return out->at(tg->gradients.gradient.at("table"));
  };
  Tensor plain = gradient("");
  Tensor padded = gradient("embeddings: {table: {padding_idx: 0}}");
  for (int64_t c = 0; c < 3; ++c) {
    CHECK(plain.data<float>()[c] != 0.f);  // row 0, looked up three times (once as -4)
    CHECK(padded.data<float>()[c] == 0.f);
  }
  for (int64_t k = 3; k < 12; ++k) CHECK(padded.data<float>()[k] == plain.data<float>()[k]);
  // A negative padding_idx counts from the end, as PyTorch's.
  Tensor last = gradient("embeddings: {table: {padding_idx: -1}}");
  for (int64_t c = 9; c < 12; ++c) CHECK(last.data<float>()[c] == 0.f);
  // A table no Gather reads, or a row outside it, is an error naming the key.
  auto refused = [](const std::string& embeddings) {
    auto d = parse_description("loss: {type: mse, input: logits, target: labels}\n"
                               "labels: [{name: labels, dtype: float32, shape: [batch, 10]}]\n" + embeddings, "");
    REQUIRE(d.ok());
    auto tg = build_training_graph(mlp(), *d);
    REQUIRE_FALSE(tg.ok());
    return tg.status().message();
  };
  CHECK(refused("embeddings: {fc1.weight: {padding_idx: 0}}").find("no Gather") != std::string::npos);
  CHECK(refused("embeddings: {nothing: {padding_idx: 0}}").find("'nothing'") != std::string::npos);
  auto bad_key = parse_description("embeddings: {table: {padding: 0}}", "");
  REQUIRE_FALSE(bad_key.ok());
  CHECK(bad_key.status().message().find("embeddings.table.padding") != std::string::npos);
}

}  // namespace ort_train::testing
