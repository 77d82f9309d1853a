// The seams data parallelism builds on: gradients that become final while the
// backward pass runs (the plan's ready lists and RunOptions::on_output_ready),
// and the parameter store the executor writes gradients into.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "autodiff/training_graph.h"
#include "graph/onnx_io.h"
#include "graph/reachability.h"
#include "optimizers/optimizer.h"
#include "runtime/parameter_store.h"
#include "runtime/vector_ops.h"
#include "test_util.h"
#include "training/trainer.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

fs::path model_dir(const std::string& name) { return fs::path(source_dir()) / "tests/models" / name; }

std::unique_ptr<Trainer> make_trainer(const std::string& name, int64_t accum) {
  ModelDescription desc;
  TrainingGraph tg = bundled_training_graph(name, &desc);
  auto source = make_batch_source((model_dir(name) / "train_batches").string(), tg, desc, 0);
  REQUIRE(source.ok());
  TrainerOptions options;
  options.optimizer.name = "Adam";
  options.optimizer.lr = 1e-3;
  options.steps = 3;
  options.grad_accum = accum;
  auto trainer = Trainer::create(std::move(tg), options, *source);
  INFO(trainer.status().message());
  REQUIRE(trainer.ok());
  return std::move(trainer).value();
}

}  // namespace

TEST_CASE("gradients are reported final while the backward pass runs, before its last node", "[training][seams]") {
  ModelDescription desc;
  TrainingGraph tg = bundled_training_graph("bert", &desc);
  auto source = make_batch_source((model_dir("bert") / "train_batches").string(), tg, desc, 0);
  REQUIRE(source.ok());
  auto feeds = (*source)(0);
  REQUIRE(feeds.ok());
  auto ex = Executor::create(tg.model);
  REQUIRE(ex.ok());
  const size_t steps = (*ex)->plan().steps.size();
  auto ready_at = (*ex)->output_ready_steps();
  std::vector<std::string> reported;
  std::map<std::string, const void*> reported_data;
  RunOptions run;
  run.training = true;
  run.on_output_ready = [&](const std::string& name, const Tensor& value) {
    reported.push_back(name);
    reported_data[name] = value.raw();
    return Status::Ok();
  };
  auto out = (*ex)->run(*feeds, run);
  INFO(out.status().message());
  REQUIRE(out.ok());
  // Every gradient is reported once, in the order of the steps that make them.
  size_t before_last = 0;
  size_t previous = 0;
  for (const std::string& w : tg.gradients.trainable) {
    const std::string& g = tg.gradients.gradient.at(w);
    REQUIRE(ready_at.count(g));
    CHECK(std::count(reported.begin(), reported.end(), g) == 1);
    CHECK(reported_data[g] == out->at(g).raw());  // the value the run returns, not a copy
    before_last += ready_at[g] + 1 < steps;
  }
  for (const std::string& name : reported) {
    CHECK(ready_at[name] >= previous);
    previous = ready_at[name];
  }
  // All but the gradients of the weights the very first nodes read are final before the last node runs.
  size_t n = tg.gradients.trainable.size();
  INFO(before_last << " of " << n << " gradients are final before the last of " << steps << " steps");
  CHECK(before_last + 1 >= n);
  // ...and a good share of the bytes are final half-way through the backward.
  double half = gradient_bytes_final_by(tg, 0.5);
  INFO("gradient bytes final after half of the backward nodes: " << half);
  CHECK(half > 0.3);
  CHECK(gradient_bytes_final_by(tg, 1.0) == 1.0);
}

TEST_CASE("the parameter store: parameters and gradients are views of flat buffers", "[training][seams]") {
  auto trainer = make_trainer("mlp", 1);
  const ParameterStore& store = trainer->parameters();
  REQUIRE(store.groups().size() == 1);
  const auto& group = store.groups()[0];
  CHECK(group.dtype == DType::kFloat);
  const char* pbase = static_cast<const char*>(group.params.raw());
  const char* gbase = static_cast<const char*>(group.grads.raw());
  for (const auto& e : store.entries()) {
    CHECK(static_cast<const char*>(e.param.raw()) == pbase + e.offset);
    CHECK(static_cast<const char*>(e.grad.raw()) == gbase + e.offset);
    CHECK(e.offset % 64 == 0);
    // The executor reads the parameter from the store, the optimizer updates it there.
    auto c = trainer->executor().constant(e.name);
    REQUIRE(c.ok());
    CHECK(c->raw() == e.param.raw());
  }
  std::vector<float> before(group.params.data<float>(), group.params.data<float>() + group.params.numel());
  auto r = trainer->step();
  INFO(r.status().message());
  REQUIRE(r.ok());
  // Gradients were written into the store in place: no copies, and they are not zero.
  CHECK(trainer->executor().bound_output_copies() == 0);
  double sq = 0;
  for (int64_t k = 0; k < group.grads.numel(); ++k) sq += double(group.grads.data<float>()[k]) * group.grads.data<float>()[k];
  CHECK(std::sqrt(sq) == Approx(*r->grad_norm).epsilon(1e-6));
  bool changed = false;
  for (int64_t k = 0; k < group.params.numel(); ++k) changed = changed || group.params.data<float>()[k] != before[size_t(k)];
  CHECK(changed);
}

TEST_CASE("the gradient norm is taken every step", "[training]") {
  // It is the check for inf and NaN gradients (issue 33), whether the step is
  // logged or not; two runs of the same trainer agree on it and on the update.
  auto first = make_trainer("mlp", 1), second = make_trainer("mlp", 1);
  for (int i = 0; i < 3; ++i) {
    auto a = first->step(), b = second->step();
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->grad_norm.has_value());
    REQUIRE(b->grad_norm.has_value());
    CHECK(*a->grad_norm == *b->grad_norm);
    CHECK(a->loss == b->loss);
  }
  const auto& pa = first->parameters().groups()[0].params;
  const auto& pb = second->parameters().groups()[0].params;
  CHECK(std::memcmp(pa.raw(), pb.raw(), pa.nbytes()) == 0);
}

TEST_CASE("accumulating 4 micro-batches adds into the store: no Sum node, no gradient copies, no extra peak", "[training][seams]") {
  auto one = make_trainer("mlp", 1);
  auto four = make_trainer("mlp", 4);
  // Accumulation adds no node: the graphs are the same, and no weight's gradient comes from a Sum.
  CHECK(four->graph().model.graph.nodes.size() == one->graph().model.graph.nodes.size());
  std::set<std::string> gradients;
  for (const auto& [w, g] : four->graph().gradients.gradient) gradients.insert(g);
  for (const Node& n : four->graph().model.graph.nodes)
    if (n.op_type == "Sum")
      for (const std::string& o : n.outputs) CHECK_FALSE(gradients.count(o));
  for (int s = 0; s < 2; ++s) {
    REQUIRE(one->step().ok());
    REQUIRE(four->step().ok());
  }
  size_t peak1 = one->executor().allocator().peak_bytes(), peak4 = four->executor().allocator().peak_bytes();
  INFO("peak intermediate bytes: grad_accum 1 " << peak1 << ", grad_accum 4 " << peak4);
  // Written in place, a micro-batch's gradients take no intermediate memory;
  // added, each needs its kernel's output only until it is added (one at a
  // time). The old scheme held a copy of every gradient plus the run's own
  // gradient outputs: two full sets more.
  size_t gradient_bytes = four->parameters().param_bytes();
  CHECK(peak4 < peak1 + gradient_bytes);
  // A steady state takes nothing more from the system.
  size_t sys = four->executor().allocator().system_allocations();
  REQUIRE(four->step().ok());
  CHECK(four->executor().allocator().system_allocations() == sys);
}

TEST_CASE("a step of 4 micro-batches reads the loss to the host once", "[training][seams]") {
  auto four = make_trainer("mlp", 4);
  auto one = make_trainer("mlp", 1);
  for (int s = 1; s <= 3; ++s) {
    auto r = four->step();
    REQUIRE(r.ok());
    CHECK(four->loss_reads() == s);
    CHECK(std::isfinite(r->loss));
  }
  auto r1 = one->step();
  REQUIRE(r1.ok());
  CHECK(one->loss_reads() == 1);
}

}  // namespace ort_train::testing

namespace ort_train::testing {

TEST_CASE("on the CPU the store takes the model's parameters over: one copy, trained in place", "[training][seams]") {
  ModelDescription desc;
  TrainingGraph tg = bundled_training_graph("mlp", &desc);
  std::map<std::string, Tensor> callers;  // what a caller's forward model holds
  for (const std::string& w : tg.gradients.trainable) callers[w] = tg.model.graph.initializers.at(w);
  std::map<std::string, std::vector<float>> before;
  for (const auto& [w, t] : callers) before[w] = std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  auto source = make_batch_source((fs::path(source_dir()) / "tests/models/mlp/train_batches").string(), tg, desc, 0);
  REQUIRE(source.ok());
  TrainerOptions options;
  options.optimizer.name = "Sgd";
  options.optimizer.lr = 0.1;
  auto trainer = Trainer::create(std::move(tg), options, *source);
  REQUIRE(trainer.ok());
  const ParameterStore& store = (*trainer)->parameters();
  REQUIRE(store.groups().size() == 1);
  const auto* base = static_cast<const char*>(store.groups()[0].params.raw());
  for (const auto& [w, t] : callers) {
    INFO(w);
    const auto* p = static_cast<const char*>(t.raw());
    CHECK(p >= base);
    CHECK(p + t.nbytes() <= base + store.groups()[0].params.nbytes());
    CHECK(p == store.find(w)->param.raw());
    CHECK(std::vector<float>(t.data<float>(), t.data<float>() + t.numel()) == before[w]);  // the values moved intact
  }
  REQUIRE((*trainer)->step().ok());
  int changed = 0;  // the caller sees the update without sync_to_host
  for (const auto& [w, t] : callers) changed += std::vector<float>(t.data<float>(), t.data<float>() + t.numel()) != before[w];
  CHECK(changed == static_cast<int>(callers.size()));
}

}  // namespace ort_train::testing

namespace ort_train::testing {

TEST_CASE("training with the replay arena (the GPU's default) matches training without it bit for bit",
          "[training][replay]") {
  std::vector<double> losses[2];
  for (int arena = 0; arena < 2; ++arena) {
    auto trainer = make_trainer("bert", 2);
    trainer->executor().use_replay_arena(arena == 1);
    for (int s = 0; s < 3; ++s) {
      auto r = trainer->step();
      INFO(r.status().message());
      REQUIRE(r.ok());
      losses[arena].push_back(r->loss);
      losses[arena].push_back(*r->grad_norm);
    }
    if (arena == 1) CHECK(trainer->executor().arena_outputs() > 0);
  }
  CHECK(losses[0] == losses[1]);
}

// In a step: the norm the trainer reports is global_norm of the gradients it
// updated with (one micro-batch: the factor is 1, exact), taken during the backward.
TEST_CASE("backward_norm.a_cpu_step_reports_the_norm_of_its_gradients", "[training][seams]") {
  for (int64_t accum : {1, 2}) {
    auto trainer = make_trainer("mlp", accum);
    auto r = trainer->step();
    INFO(r.status().message());
    REQUIRE(r.ok());
    std::vector<Tensor> grads;
    for (const auto& e : trainer->parameters().entries()) grads.push_back(e.master_grad);
    auto math = vector_ops(DeviceKind::kCpu);
    REQUIRE(math.ok());
    auto want = (*math)->global_norm(grads);
    REQUIRE(want.ok());
    INFO("micro-batches " << accum);
    CHECK(*r->grad_norm == *want / static_cast<double>(accum));
  }
}

}  // namespace ort_train::testing
