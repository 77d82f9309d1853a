// training/training_run.h: the loop without the command line. A run writes a
// metrics line per step and checkpoints when due; a second run resumes from
// the newest checkpoint, keeps the first run's lines, and ends where one
// uninterrupted run ends, bit for bit.
#include "training/training_run.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "autodiff/training_graph.h"
#include "test_util.h"
#include "training/checkpoint.h"
#include "training/finite_state.h"

namespace ort_train::testing {
namespace {

Model linear_model() {
  Model m;
  m.ir_version = 8;
  m.opset_imports.push_back({"", 17});
  Graph& g = m.graph;
  g.name = "linear";
  g.inputs.push_back(ValueInfo{"x", DType::kFloat, shape_from_dims({4, 3}), ""});
  g.initializers["W"] = random_tensor({3, 2}, 11);
  g.initializers["b"] = make<float>({2}, {0.1f, -0.2f});
  g.initializer_order = {"W", "b"};
  g.nodes.push_back(Node{"matmul", "MatMul", "", {"x", "W"}, {"mm"}, {}, ""});
  g.nodes.push_back(Node{"add", "Add", "", {"mm", "b"}, {"logits"}, {}, ""});
  g.outputs.push_back(ValueInfo{"logits", DType::kFloat, shape_from_dims({4, 2}), ""});
  return m;
}

ModelDescription description() {
  auto desc = parse_description(R"(
inputs: [{name: x, dtype: float32, shape: [4, 3]}]
labels: [{name: labels, dtype: float32, shape: [4, 2]}]
loss: {type: mse, input: logits, target: labels}
)", "");
  REQUIRE(desc.ok());
  return *desc;
}

struct Run {
  std::unique_ptr<Trainer> trainer;
  RunSettings settings;
  std::map<std::string, std::string> fingerprint;
};

// A fresh model each time; micro-batch i is a function of i, as real data is.
Run make_run(int64_t steps, DType precision = DType::kFloat) {
  ModelDescription desc = description();
  desc.precision = precision;
  auto tg = build_training_graph(linear_model(), desc);
  REQUIRE(tg.ok());
  BatchSource source{[](int64_t i) -> Result<std::map<std::string, Tensor>> {
                       return std::map<std::string, Tensor>{{"x", random_tensor({4, 3}, 100 + i)},
                                                            {"labels", random_tensor({4, 2}, 200 + i)}};
                     },
                     8};
  TrainerOptions options;
  options.optimizer.name = "Adam";
  options.optimizer.lr = 0.05;
  options.steps = steps;
  Run r;
  r.fingerprint = training_fingerprint(*tg, options);
  auto trainer = Trainer::create(std::move(tg).value(), options, source);
  REQUIRE(trainer.ok());
  r.trainer = std::move(trainer).value();
  r.settings.steps = steps;
  r.settings.fingerprint = r.fingerprint;
  return r;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// A two-step run checkpointed into `dir`: the path of its checkpoint.
std::string checkpoint_after_two_steps(const std::string& dir, Communicator& comm,
                                      DType precision = DType::kFloat) {
  Run first = make_run(2, precision);
  first.settings.checkpoint_dir = dir;
  REQUIRE(run_training(*first.trainer, comm, first.settings).ok());
  return checkpoint_path(dir, 2);
}

// `run`, resumed from the newest checkpoint in `dir`.
Result<RunOutcome> resume_from(const std::string& dir, Run& run, Communicator& comm) {
  run.settings.checkpoint_dir = dir;
  run.settings.resume = true;
  return run_training(*run.trainer, comm, run.settings);
}

std::vector<float> weights(Trainer& t) {
  REQUIRE(t.sync_to_host().ok());
  const Tensor& w = t.graph().model.graph.initializers.at("W");
  return std::vector<float>(w.data<float>(), w.data<float>() + w.numel());
}

TEST_CASE("training_run: metrics and checkpoints as the steps go, and a resume that ends where one run ends") {
  Dir d("ort_train_training_run");
  auto comm = job_communicator();
  REQUIRE(comm.ok());

  Run whole = make_run(6);
  auto straight = run_training(*whole.trainer, **comm, whole.settings);
  REQUIRE(straight.ok());

  Run first = make_run(6);
  first.settings.steps = 4;  // the first part of the same six-step schedule
  first.settings.checkpoint_dir = d / "ckpt";
  first.settings.save_every = 2;
  first.settings.metrics = d / "m.jsonl";
  auto out = run_training(*first.trainer, **comm, first.settings);
  INFO(out.status().message());
  REQUIRE(out.ok());
  CHECK(out->stopped_by == 0);
  CHECK(out->last_evaluation.ok());
  CHECK(out->metrics_file == d / "m.jsonl");
  std::vector<std::string> lines = lines_of(d / "m.jsonl");
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].rfind(R"({"step": 1, "loss": )", 0) == 0);
  CHECK(lines[3].rfind(R"({"step": 4, )", 0) == 0);
  CHECK(list_checkpoints(d / "ckpt") ==
        std::vector<std::string>{checkpoint_path(d / "ckpt", 4), checkpoint_path(d / "ckpt", 2)});

  Run second = make_run(6);
  second.settings.checkpoint_dir = d / "ckpt";
  second.settings.metrics = d / "m.jsonl";
  second.settings.resume = true;
  out = run_training(*second.trainer, **comm, second.settings);
  INFO(out.status().message());
  REQUIRE(out.ok());
  CHECK(second.trainer->steps_done() == 6);
  lines = lines_of(d / "m.jsonl");
  REQUIRE(lines.size() == 6);  // the first run's four, then steps 5 and 6
  CHECK(lines[4].rfind(R"({"step": 5, )", 0) == 0);
  CHECK(weights(*second.trainer) == weights(*whole.trainer));
}

TEST_CASE("training_run: a resume with another run's fingerprint is refused, naming the checkpoint") {
  Dir d("ort_train_training_run_fingerprint");
  auto comm = job_communicator();
  REQUIRE(comm.ok());
  const std::string path = checkpoint_after_two_steps(d / "ckpt", **comm);
  Run other = make_run(4);
  other.settings.fingerprint["optimizer"] = "Sgd";
  auto out = resume_from(d / "ckpt", other, **comm);
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message().find(path) != std::string::npos);
}

// Issue 52, item 3: a checkpoint with a valid hash whose data position no run
// can have (2^63 - 1 wrapped negative as training went on, then spun in the
// row order; one before its own step) is refused before any step.
TEST_CASE("training_run: a forged data position in a checkpoint is refused on resume") {
  Dir d("ort_train_training_run_forged");
  auto comm = job_communicator();
  REQUIRE(comm.ok());
  const std::string path = checkpoint_after_two_steps(d / "ckpt", **comm);
  for (int64_t forged : {std::numeric_limits<int64_t>::max(), int64_t{1}}) {
    auto c = read_checkpoint(path);
    REQUIRE(c.ok());
    c->micro_batch = forged;
    REQUIRE(write_checkpoint(*c, path).ok());  // a valid hash over the forged header
    Run again = make_run(4);
    auto out = resume_from(d / "ckpt", again, **comm);
    INFO(forged);
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.status().message(), Catch::Contains("data position"));
    CHECK(again.trainer->steps_done() == 0);
  }
}

// Issue 52, item 7: weights and optimizer state are checked for inf and NaN
// after a resume and before a checkpoint (and, in train, before the export).
TEST_CASE("training_run: a NaN in the optimizer state or a weight is refused, never written") {
  Dir d("ort_train_training_run_nan");
  auto comm = job_communicator();
  REQUIRE(comm.ok());
  const std::string path = checkpoint_after_two_steps(d / "ckpt", **comm);
  auto c = read_checkpoint(path);
  REQUIRE(c.ok());
  bool poisoned = false;
  for (auto& [name, t] : c->tensors)
    if (!poisoned && name.rfind("state/", 0) == 0 && t.dtype() == DType::kFloat) {
      t.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
      poisoned = true;
    }
  REQUIRE(poisoned);
  REQUIRE(write_checkpoint(*c, path).ok());
  Run again = make_run(4);
  auto out = resume_from(d / "ckpt", again, **comm);
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.status().message(), Catch::Contains("the optimizer state"));
  CHECK_THAT(out.status().message(), Catch::Contains("inf or NaN in the checkpoint resumed from"));

  Run fresh = make_run(2);
  CHECK(check_finite_state(*fresh.trainer, "now").ok());
  Tensor w = fresh.trainer->parameters().entries()[0].master;
  w.data<float>()[1] = std::numeric_limits<float>::infinity();
  Status refused = check_finite_state(*fresh.trainer, "before the export");
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.message(),
             Catch::Contains("the weight '" + fresh.trainer->parameters().entries()[0].name + "' holds inf or NaN before the export"));
}

// Issue 52 (a further round): fp16's loss-scaler state in a checkpoint is
// what GradScaler can hold: a NaN, infinite, zero or negative scale, or a
// clean-step count outside [0, growth_interval), is refused on resume (a NaN
// scale skipped every step and was written on).
TEST_CASE("training_run: a forged loss scaler state is refused on resume") {
  Dir d("ort_train_training_run_scaler");
  auto comm = job_communicator();
  REQUIRE(comm.ok());
  const std::string path = checkpoint_after_two_steps(d / "ckpt", **comm, DType::kFloat16);
  const std::string original = d / "original.ortc";  // outside the folder a resume reads
  std::filesystem::copy_file(path, original);
  struct Forged {
    const char* key;
    double value;
    const char* message;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const Forged& f : {Forged{"scaler/scale", nan, "loss scale is"}, Forged{"scaler/scale", inf, "loss scale is"},
                          Forged{"scaler/scale", -65536, "loss scale is"}, Forged{"scaler/scale", 0, "loss scale is"},
                          Forged{"scaler/growth_tracker", -5, "growth tracker is -5"},
                          Forged{"scaler/growth_tracker", 9e18, "growth tracker is"}}) {
    INFO(f.key << " = " << f.value);
    auto c = read_checkpoint(original);
    REQUIRE(c.ok());
    bool found = false;
    for (auto& [name, t] : c->tensors) {
      if (name != f.key) continue;
      found = true;
      if (t.dtype() == DType::kFloat) t.data<float>()[0] = static_cast<float>(f.value);
      else t.data<int64_t>()[0] = static_cast<int64_t>(f.value);
    }
    REQUIRE(found);
    REQUIRE(write_checkpoint(*c, path).ok());
    Run again = make_run(4, DType::kFloat16);
    auto out = resume_from(d / "ckpt", again, **comm);
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.status().message(), Catch::Contains(f.message));
    CHECK(again.trainer->steps_done() == 0);
  }
  // The original resumes.
  std::filesystem::copy_file(original, path, std::filesystem::copy_options::overwrite_existing);
  Run again = make_run(4, DType::kFloat16);
  auto out = resume_from(d / "ckpt", again, **comm);
  INFO(out.status().message());
  CHECK(out.ok());
}

TEST_CASE("training_run: epochs become steps over every rank's micro-batches, and too many are refused") {
  CHECK(*steps_for_epochs(3, 10, 2, 2) == 8);  // 30 micro-batches, 4 a step: the last step partial
  CHECK(*steps_for_epochs(1, 3, 4, 1) == 1);   // never no step
  CHECK(*steps_for_epochs(2, 10, 1, 1) == 20);
  auto huge = steps_for_epochs(int64_t{1} << 62, 8, 1, 1);
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().message().find("--epochs") != std::string::npos);
}

}  // namespace
}  // namespace ort_train::testing
