// The default passes on the bundled models' training graphs (forward, loss
// and backward), the trainable initializers pinned: the graph stays valid,
// the parameters stay untouched, and the loss and every gradient match the
// unoptimized graph's on a real batch.
#include <filesystem>

#include "autodiff/training_graph.h"
#include "graph/passes/pass_manager.h"
#include "graph/passes/pass_test_util.h"
#include "training/batch_data.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

std::map<std::string, Tensor> run_training_graph(const Model& m, const std::map<std::string, Tensor>& feeds) {
  auto ex = Executor::create(m);
  INFO(ex.status().message());
  REQUIRE(ex.ok());
  RunOptions options;
  options.training = true;
  auto out = (*ex)->run(feeds, options);
  INFO(out.status().message());
  REQUIRE(out.ok());
  std::map<std::string, Tensor> result;
  for (const auto& [name, t] : *out) result[name] = t.clone();
  return result;
}

void check_passes_on(const std::string& name) {
  fs::path dir = fs::path(source_dir()) / "tests/models" / name;
  INFO("model " << name);
  const TrainingGraph tg = bundled_training_graph(name);
  std::vector<std::string> inputs;
  for (const ValueInfo* v : tg.model.graph.required_inputs()) inputs.push_back(v->name);
  auto feeds = read_batch_dir((dir / "train_batches/0").string(), inputs);
  INFO(feeds.status().message());
  REQUIRE(feeds.ok());
  auto before = run_training_graph(tg.model, *feeds);

  Model optimized = tg.model;
  std::set<std::string> pinned(tg.gradients.trainable.begin(), tg.gradients.trainable.end());
  auto report = run_passes(optimized, pinned);
  INFO(report.status().message());
  REQUIRE(report.ok());
  INFO(report->summary());
  REQUIRE(report->fixed_point);
  REQUIRE(optimized.graph.nodes.size() <= tg.model.graph.nodes.size());
  for (const std::string& w : pinned) {
    INFO("trainable " << w);
    REQUIRE(optimized.graph.is_initializer(w));
    REQUIRE(optimized.graph.initializers.at(w).raw() == tg.model.graph.initializers.at(w).raw());
  }
  std::printf("graph passes %-15s %zu -> %zu nodes, %zu -> %zu initializers, %lld round(s)\n", name.c_str(),
              tg.model.graph.nodes.size(), optimized.graph.nodes.size(), tg.model.graph.initializers.size(),
              optimized.graph.initializers.size(), static_cast<long long>(report->rounds));

  auto after = run_training_graph(optimized, *feeds);
  REQUIRE(after.size() == before.size());
  for (const auto& [out, t] : before) {
    INFO("output " << out);
    REQUIRE(after.count(out) == 1);
    require_close(after.at(out), t, 1e-5, 1e-6);  // folding runs the same kernels: equal up to summation order
  }
}

}  // namespace

TEST_CASE("graph passes keep the mlp training graph's results", "[passes][models]") { check_passes_on("mlp"); }
TEST_CASE("graph passes keep the lenet training graph's results", "[passes][models]") { check_passes_on("lenet"); }
TEST_CASE("graph passes keep the bert training graph's results", "[passes][models]") { check_passes_on("bert"); }
TEST_CASE("graph passes keep the gpt training graph's results", "[passes][models]") { check_passes_on("gpt"); }
TEST_CASE("graph passes keep the transformer_lm training graph's results", "[passes][models]") {
  check_passes_on("transformer_lm");
}
TEST_CASE("graph passes keep the cnn_bn training graph's results", "[passes][models]") { check_passes_on("cnn_bn"); }

}  // namespace ort_train::testing
