// The step graph (training/step_graph.h): the one graph a training step runs,
// which --save-training-graph writes, the memory estimate reads and the
// trainer executes.
#include <algorithm>
#include <filesystem>
#include <functional>

#include "graph/onnx_io.h"
#include "training/step_graph.h"
#include "training/trainer.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

struct Bundled {
  TrainingGraph tg;
  ModelDescription desc;
  fs::path dir;
};

Bundled bundled(const std::string& name, DType precision = DType::kFloat,
                const std::function<void(Model&)>& edit = {}) {
  fs::path dir = fs::path(source_dir()) / "tests/models" / name;
  auto desc = load_description((dir / "training.yaml").string());
  REQUIRE(desc.ok());
  desc->precision = precision;
  auto model = load_model((dir / "model.onnx").string());
  REQUIRE(model.ok());
  if (edit) edit(*model);
  auto tg = build_training_graph(std::move(model).value(), *desc);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  return {std::move(tg).value(), *desc, dir};
}

bool has_node(const Model& m, const std::string& name) {
  return std::any_of(m.graph.nodes.begin(), m.graph.nodes.end(), [&](const Node& n) { return n.name == name; });
}

bool has_output(const Model& m, const std::string& name) {
  return std::any_of(m.graph.outputs.begin(), m.graph.outputs.end(),
                     [&](const ValueInfo& v) { return v.name == name; });
}

}  // namespace

// A step computes the loss and the gradients; a model output the loss does not
// need (here a second head on the MLP's hidden layer) stays in the training
// graph for evaluation, but not in the step's graph.
TEST_CASE("step_graph.leaves_out_outputs_the_loss_does_not_need") {
  Bundled b = bundled("mlp", DType::kFloat, [](Model& m) {
    const std::string hidden = m.graph.nodes[0].outputs[0];
    m.graph.nodes.push_back({"extra_head", "Neg", "", {hidden}, {"extra"}, {}, ""});
    m.graph.outputs.push_back({"extra", DType::kUndefined, std::nullopt, ""});
  });
  const TrainingGraph* tg = &b.tg;
  CHECK(has_node(tg->model, "extra_head"));
  auto step = build_step_graph(*tg);
  REQUIRE(step.ok());
  CHECK_FALSE(has_node(step->model, "extra_head"));
  CHECK(step->model.graph.outputs.size() == 1 + tg->gradients.trainable.size());
  CHECK(step->model.graph.outputs[0].name == tg->gradients.loss);
  CHECK(step->state_writebacks.empty());
  CHECK(step->hoisted.empty());
}

// BatchNormalization declares its outputs 1 and 2 as the next values of
// inputs 3 and 4: they become step outputs, written back into the running
// statistics after every micro-batch.
TEST_CASE("step_graph.batch_norm_statistics_are_step_outputs") {
  Bundled b = bundled("cnn_bn");
  auto step = build_step_graph(b.tg);
  INFO(step.status().message());
  REQUIRE(step.ok());
  std::vector<std::string> updated;
  for (const auto& [out, init] : step->state_writebacks) {
    CHECK(has_output(step->model, out));
    CHECK(step->model.graph.is_initializer(init));
    updated.push_back(init);
  }
  std::sort(updated.begin(), updated.end());
  CHECK(updated == std::vector<std::string>{"bn1.running_mean", "bn1.running_var", "bn2.running_mean",
                                            "bn2.running_var"});
}

// --precision bf16: each Cast of a trainable weight is an initializer holding
// the weight rounded, and no such Cast is left.
TEST_CASE("step_graph.weight_casts_become_rounded_copies") {
  Bundled b = bundled("bert", DType::kBFloat16);
  auto step = build_step_graph(b.tg);
  INFO(step.status().message());
  REQUIRE(step.ok());
  REQUIRE_FALSE(step->hoisted.empty());
  // The step graph's metadata names each copy's weight, so a saved step graph says it too.
  const auto recorded = hoisted_weight_copies(step->model);
  REQUIRE(recorded.size() == step->hoisted.size());
  for (size_t i = 0; i < recorded.size(); ++i) {
    CHECK(recorded[i].weight == step->hoisted[i].weight);
    CHECK(recorded[i].copy == step->hoisted[i].copy);
  }
  const auto& trainable = b.tg.gradients.trainable;
  for (const Node& n : step->model.graph.nodes)
    if (n.op_type == "Cast")
      CHECK(std::find(trainable.begin(), trainable.end(), n.inputs[0]) == trainable.end());
  for (const HoistedCopy& h : step->hoisted) {
    const Tensor& w = step->model.graph.initializers.at(h.weight);
    const Tensor& copy = step->model.graph.initializers.at(h.copy);
    REQUIRE(copy.dtype() == DType::kBFloat16);
    REQUIRE(copy.numel() == w.numel());
    bool equal = true;
    for (int64_t k = 0; k < w.numel(); ++k)
      equal = equal && static_cast<float>(BFloat16(w.data<float>()[k])) ==
                           static_cast<float>(copy.data<BFloat16>()[k]);
    INFO(h.weight);
    CHECK(equal);
  }
  // The training graph itself still casts (evaluation runs it).
  CHECK(std::any_of(b.tg.model.graph.nodes.begin(), b.tg.model.graph.nodes.end(),
                    [](const Node& n) { return n.op_type == "Cast"; }));
}

// Evaluation's graph: the loss (and a classification loss's scores, for the
// accuracy), no backward node, no state outputs.
TEST_CASE("step_graph.evaluation_runs_the_forward_and_the_loss_only") {
  for (auto [name, classifies] : {std::pair{"cnn_bn", true}, std::pair{"mlp", false}}) {
    INFO(name);
    Bundled b = bundled(name);
    CHECK(is_classification(b.tg.loss) == classifies);
    auto eval = build_eval_graph(b.tg);
    REQUIRE(eval.ok());
    std::vector<std::string> outputs;
    for (const ValueInfo& v : eval->graph.outputs) outputs.push_back(v.name);
    std::vector<std::string> want{b.tg.gradients.loss};
    if (classifies) want.push_back(b.tg.loss.input);
    CHECK(outputs == want);
    for (const Node& n : eval->graph.nodes) {
      INFO(n.name);
      CHECK(n.op_type.find("Grad") == std::string::npos);
    }
    CHECK(eval->graph.nodes.size() == forward_node_count(b.tg));
  }
}

// What --save-training-graph writes is, node for node, what the trainer runs:
// names, ops, inputs, outputs, graph outputs and initializers, for a model
// with BatchNorm statistics and for one with hoisted 16-bit weight copies.
TEST_CASE("step_graph.the_saved_training_graph_is_the_executed_one") {
  for (auto [name, precision] : {std::pair{"cnn_bn", DType::kFloat}, std::pair{"bert", DType::kBFloat16}}) {
    INFO(name);
    Bundled b = bundled(name, precision);
    auto step = build_step_graph(b.tg);
    REQUIRE(step.ok());
    fs::path file = fs::temp_directory_path() / (std::string("ort_train_step_graph_") + name + ".onnx");
    REQUIRE(save_model(step->model, file.string()).ok());
    auto saved = load_model(file.string());
    fs::remove(file);
    REQUIRE(saved.ok());
    auto source = make_batch_source((b.dir / "train_batches").string(), b.tg, b.desc, 0);
    REQUIRE(source.ok());
    TrainerOptions options;
    options.optimizer.name = "AdamW";
    auto trainer = Trainer::create(std::move(b.tg), options, *source);
    INFO(trainer.status().message());
    REQUIRE(trainer.ok());
    REQUIRE((*trainer)->step().ok());
    const Graph& ran = (*trainer)->executor().model().graph;
    const Graph& g = saved->graph;
    REQUIRE(g.nodes.size() == ran.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      INFO(g.nodes[i].name);
      CHECK(g.nodes[i].name == ran.nodes[i].name);
      CHECK(g.nodes[i].op_type == ran.nodes[i].op_type);
      CHECK(g.nodes[i].domain == ran.nodes[i].domain);
      CHECK(g.nodes[i].inputs == ran.nodes[i].inputs);
      CHECK(g.nodes[i].outputs == ran.nodes[i].outputs);
    }
    std::vector<std::string> a, r;
    for (const ValueInfo& v : g.outputs) a.push_back(v.name);
    for (const ValueInfo& v : ran.outputs) r.push_back(v.name);
    CHECK(a == r);
    std::set<std::string> ai, ri;
    for (const auto& [n, t] : g.initializers) ai.insert(n);
    for (const auto& [n, t] : ran.initializers) ri.insert(n);
    CHECK(ai == ri);
  }
}

// train builds the step graph once, saves and estimates it, and hands that
// object to the trainer (Trainer::create with a StepGraph), which points its
// weights at the parameter store (here they are copies the store never sees).
// Three steps from it are the bits of three steps from a trainer that builds
// its own: the weights train, BatchNorm's statistics are written back, the
// 16-bit copies are refreshed.
TEST_CASE("step_graph.a_trainer_given_the_built_graph_trains_as_one_that_builds_it") {
  for (auto [name, precision] : {std::pair{"cnn_bn", DType::kFloat}, std::pair{"bert", DType::kBFloat16}}) {
    INFO(name);
    std::vector<double> losses[2];
    for (int given = 0; given < 2; ++given) {
      Bundled b = bundled(name, precision);
      auto source = make_batch_source((b.dir / "train_batches").string(), b.tg, b.desc, 0);
      REQUIRE(source.ok());
      TrainerOptions options;
      options.optimizer.name = "AdamW";
      options.steps = 3;
      Result<std::unique_ptr<Trainer>> trainer = unsupported("not made");
      if (given) {
        auto step = build_step_graph(b.tg);
        REQUIRE(step.ok());
        // Weights the store cannot take over (as on a GPU, where it copies
        // them to the device): the trainer must make the graph read the store.
        for (const std::string& w : b.tg.gradients.trainable)
          step->model.graph.initializers[w] = step->model.graph.initializers.at(w).clone();
        trainer = Trainer::create(std::move(b.tg), std::move(step).value(), options, *source);
      } else {
        trainer = Trainer::create(std::move(b.tg), options, *source);
      }
      INFO(trainer.status().message());
      REQUIRE(trainer.ok());
      for (int s = 0; s < 3; ++s) {
        auto report = (*trainer)->step();
        REQUIRE(report.ok());
        losses[given].push_back(report->loss);
      }
    }
    CHECK(losses[0][0] != losses[0][2]);  // it trains
    CHECK(losses[0] == losses[1]);
  }
}

}  // namespace ort_train::testing
