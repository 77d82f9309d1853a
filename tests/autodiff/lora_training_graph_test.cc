// A training graph with the description's lora: the adapters and train_also
// train, every other initializer is frozen, and no gradient is computed for a
// frozen weight: the backward holds no path that ends only at frozen ones.
#include <algorithm>

#include "autodiff/training_graph.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

Result<TrainingGraph> mlp_with(const std::string& lora) {
  auto model = load_model(source_dir() + "/tests/models/mlp/model.onnx");
  REQUIRE(model.ok());
  auto desc = parse_description(R"(
inputs: [{name: x, dtype: float32, shape: [batch, 32]}]
labels: [{name: labels, dtype: float32, shape: [batch, 10]}]
loss: {type: mse, input: logits, target: labels}
dims: {batch: 4}
)" + lora, "", "lora.yaml");
  INFO(desc.status().message());
  REQUIRE(desc.ok());
  return build_training_graph(std::move(model).value(), *desc);
}

// How many backward nodes read `value`.
size_t backward_readers(const TrainingGraph& tg, const std::string& value) {
  const size_t forward = forward_node_count(tg);
  size_t n = 0;
  for (size_t k = 0; k < tg.model.graph.nodes.size(); ++k) {
    const Node& node = tg.model.graph.nodes[k];
    n += k >= forward && std::count(node.inputs.begin(), node.inputs.end(), value) > 0;
  }
  return n;
}

}  // namespace

TEST_CASE("lora training graph: only the adapters and train_also train, and frozen weights get no gradient",
          "[lora][autodiff]") {
  auto tg = mlp_with("lora: {targets: [\"fc3.weight\"], rank: 2, train_also: [\"fc3.bias\"]}\n");
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  REQUIRE(tg->lora.adapters.size() == 1);
  const LoraAdapter& ad = tg->lora.adapters[0];
  CHECK(ad.module == "fc3");
  std::vector<std::string> trains = tg->gradients.trainable;
  std::sort(trains.begin(), trains.end());
  CHECK(trains == std::vector<std::string>{"fc3.bias", ad.a, ad.b});
  for (const char* frozen : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight"}) {
    INFO(frozen);
    CHECK_FALSE(tg->gradients.gradient.count(frozen));
    CHECK(std::find(tg->selection.frozen.begin(), tg->selection.frozen.end(), frozen) != tg->selection.frozen.end());
  }
  // Nothing below the last layer trains, so the backward stops there: no
  // node of it reads the first two layers' weights (their dX would be needed
  // only for something that trains further down).
  CHECK(backward_readers(*tg, "fc1.weight") == 0);
  CHECK(backward_readers(*tg, "fc2.weight") == 0);
  // Full fine-tuning of the same model does read them.
  auto full = mlp_with("");
  REQUIRE(full.ok());
  CHECK(backward_readers(*full, "fc2.weight") > 0);
  CHECK(tg->model.graph.nodes.size() < full->model.graph.nodes.size());
}

TEST_CASE("lora training graph: train_also or targets that match nothing are refused, naming the nearest", "[lora][autodiff]") {
  auto none = mlp_with("lora: {targets: [\"fc1*\"], train_also: [\"*LayerNorm*\"]}\n");
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.status().message(), Catch::Contains("lora.train_also '*LayerNorm*' matches no"));
  auto near = mlp_with("lora: {targets: [\"fc_1*\"]}\n");
  REQUIRE_FALSE(near.ok());
  CHECK_THAT(near.status().message(), Catch::Contains("lora.targets 'fc_1*' matches no weight"));
  CHECK_THAT(near.status().message(), Catch::Contains("fc1.weight"));
}

}  // namespace ort_train::testing
