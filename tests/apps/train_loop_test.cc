// The training loop through the real binary: metrics lines, export, and
// checkpoints — a run killed with SIGKILL after a checkpoint resumes to the
// same losses bit for bit, a truncated checkpoint is skipped for the previous
// one, and a checkpoint of another run is refused with what differs.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "graph/onnx_io.h"
#include "training/checkpoint.h"
#include "runtime/device.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

// On the CPU even where a GPU is visible: these tests hold the CPU path to its
// exact expectations (bit-identical resume); the GPU has its own tests.
std::string mlp_args(const std::string& optimizer = "adam", const std::string& level = "warn",
                     const std::string& device = "cpu") {
  std::string m = source_dir() + "/tests/models/mlp";
  return "--log-level " + level + " --model " + m + "/model.onnx --config " + m + "/training.yaml --data " + m +
         "/train_batches --optimizer " + optimizer + " --lr 0.01 --device " + device;
}

std::vector<std::string> loss_fields(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find("\"loss\": "), b = line.find(',', a);
    out.push_back(line.substr(a + 8, b - a - 8));
  }
  return out;
}

}  // namespace

TEST_CASE("train.metrics_and_export") {
  Dir d("ort_train_train_loop");
  // Into a run folder that does not exist yet: train makes it, as PyTorch's writers do.
  CliOutcome o = run_cli(mlp_args() + " --steps 5 --metrics " + (d / "run/m.jsonl") + " --export " +
                             (d / "run/model/out.onnx"),
                         d.p.string());
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  std::ifstream in(d / "run/m.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    for (const char* key : {"\"step\": ", "\"loss\": ", "\"lr\": ", "\"grad_norm\": ", "\"samples_per_s\": ", "\"step_ms\": "})
      CHECK(line.find(key) != std::string::npos);
  }
  CHECK(lines == 5);
  auto trained = load_model(d / "run/model/out.onnx");
  auto original = load_model(source_dir() + "/tests/models/mlp/model.onnx");
  REQUIRE(trained.ok());
  REQUIRE(original.ok());
  REQUIRE(trained->graph.nodes.size() == original->graph.nodes.size());
  for (size_t i = 0; i < trained->graph.nodes.size(); ++i) CHECK(trained->graph.nodes[i].name == original->graph.nodes[i].name);
  CHECK(trained->graph.inputs.size() == original->graph.inputs.size());
  CHECK(trained->graph.outputs.size() == original->graph.outputs.size());
  const Tensor& w1 = trained->graph.initializers.at("fc1.weight");
  const Tensor& w0 = original->graph.initializers.at("fc1.weight");
  CHECK(std::memcmp(w1.raw(), w0.raw(), w0.nbytes()) != 0);
}

// A run that fails before its first step leaves no empty metrics file behind;
// one that fails later keeps its lines in <path>.partial, and never <path>.
TEST_CASE("train.a_failed_run_leaves_no_empty_metrics_file") {
  Dir d("ort_train_failed_metrics");
  std::string m = source_dir() + "/tests/models/mlp";
  for (int bad : {0, 1}) {  // which batch is damaged: the first step's, or the second's
    INFO("damaged batch " << bad);
    fs::remove_all(d.p / "data");
    for (int b : {0, 1}) {
      fs::create_directories(d.p / "data" / std::to_string(b));
      for (const char* f : {"x.pb", "labels.pb"})
        fs::copy_file(m + "/train_batches/0/" + f, d.p / "data" / std::to_string(b) / f);
    }
    std::ofstream(d.p / "data" / std::to_string(bad) / "x.pb", std::ios::trunc) << "not a tensor";
    fs::remove(d.p / "m.jsonl.partial");
    CliOutcome o = run_cli("--log-level warn --model " + m + "/model.onnx --config " + m + "/training.yaml --data " +
                               (d / "data") + " --optimizer adam --steps 3 --device cpu --metrics " + (d / "m.jsonl"),
                           d.p.string());
    INFO(o.stderr_text);
    CHECK(o.exit_code != 0);
    CHECK_FALSE(fs::exists(d.p / "m.jsonl"));
    CHECK(fs::exists(d.p / "m.jsonl.partial") == (bad == 1));
  }
}

TEST_CASE("train.resume_after_sigkill_is_bit_exact") {
  Dir d("ort_train_resume");
  // The metrics of an earlier, complete run: the killed run must not replace
  // them with its partial lines (it writes run.jsonl.partial until it ends).
  const std::string earlier = "{\"step\": 1, \"loss\": 0.5}\n";
  std::ofstream(d / "run.jsonl") << earlier;
  // A long run killed once it has written a checkpoint.
  // Kernels chosen by timing (the GEMM library): the killed run's, kept in its checkpoint folder
  // for --resume and in choices.json for the straight run below.
  const std::string choices = " --kernel-choices " + (d / "choices.json");
  std::string cmd = ort_train_binary() + " " + mlp_args() + " --steps 1000000 --save-every 20 --keep 2 --checkpoint-dir " +
                    (d / "ck") + " --metrics " + (d / "run.jsonl") + choices + " > /dev/null 2>&1 & echo $! > " +
                    (d / "pid");
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::ifstream pid_in(d / "pid");
  int pid = 0;
  pid_in >> pid;
  REQUIRE(pid > 0);
  for (int i = 0; i < 600 && list_checkpoints(d / "ck").size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(*read_file(d / "run.jsonl") == earlier);
  CHECK(loss_fields(d / "run.jsonl.partial").size() >= 20);
  auto kept = list_checkpoints(d / "ck");
  REQUIRE_FALSE(kept.empty());
  auto newest = read_checkpoint(kept[0]);
  INFO(newest.status().message());
  REQUIRE(newest.ok());
  int64_t k = newest->step, total = k + 8;

  // The resumed run keeps the killed run's lines up to its checkpoint (the
  // ones after it are replayed) and writes run.jsonl when it ends.
  CliOutcome resumed = run_cli(mlp_args() + " --steps " + std::to_string(total) + " --checkpoint-dir " + (d / "ck") +
                                   " --resume --metrics " + (d / "run.jsonl"), d.p.string());
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  CHECK_FALSE(fs::exists(d / "run.jsonl.partial"));
  CliOutcome straight = run_cli(mlp_args() + " --steps " + std::to_string(total) + " --metrics " + (d / "straight.jsonl") +
                                    choices,
                                d.p.string());
  REQUIRE(straight.exit_code == 0);
  auto a = loss_fields(d / "straight.jsonl");
  auto b = loss_fields(d / "run.jsonl");
  REQUIRE(a.size() == static_cast<size_t>(total));
  REQUIRE(b.size() == static_cast<size_t>(total));
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("step " << i + 1 << (static_cast<int64_t>(i) < k ? " (killed run)" : " (resumed run)"));
    CHECK(b[i] == a[i]);  // the shortest exact decimal of each double
  }
}

TEST_CASE("train.a_second_run_on_a_checkpoint_folder_is_refused") {
  Dir d("ort_train_checkpoint_lock");
  auto held = CheckpointDirLock::acquire(d / "ck");  // as a running ort_train holds it
  REQUIRE(held.ok());
  CliOutcome o = run_cli(mlp_args() + " --steps 2 --checkpoint-dir " + (d / "ck"), d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK(o.stderr_text.find("checkpoint folder " + (d / "ck") + " is in use by another ort_train (pid " +
                           std::to_string(::getpid()) + ")") != std::string::npos);
  held->reset();  // released: the run goes ahead
  CliOutcome after = run_cli(mlp_args() + " --steps 2 --checkpoint-dir " + (d / "ck"), d.p.string());
  INFO(after.stderr_text);
  CHECK(after.exit_code == 0);
  CHECK(list_checkpoints(d / "ck").size() == 1);
}

TEST_CASE("train.damaged_checkpoint_is_skipped_and_foreign_one_refused") {
  Dir d("ort_train_ckpt_checks");
  CliOutcome first = run_cli(mlp_args() + " --steps 4 --save-every 2 --checkpoint-dir " + (d / "ck"), d.p.string());
  REQUIRE(first.exit_code == 0);
  auto all = list_checkpoints(d / "ck");
  REQUIRE(all.size() == 2);
  fs::resize_file(all[0], fs::file_size(all[0]) / 2);  // truncate the newest
  CHECK_FALSE(read_checkpoint(all[0]).ok());
  CliOutcome resumed = run_cli(mlp_args("adam", "info") + " --steps 5 --resume --checkpoint-dir " + (d / "ck"),
                               d.p.string());
  INFO(resumed.stderr_text << resumed.stdout_text);
  CHECK(resumed.exit_code == 0);
  std::string log = resumed.stdout_text + resumed.stderr_text;
  CHECK(log.find("truncated checkpoint") != std::string::npos);
  CHECK(log.find("resumed from " + all[1]) != std::string::npos);

  CliOutcome foreign = run_cli(mlp_args("sgd") + " --steps 6 --resume --checkpoint-dir " + (d / "ck"), d.p.string());
  INFO(foreign.stderr_text);
  CHECK(foreign.exit_code != 0);
  CHECK(foreign.stderr_text.find("does not match this run: optimizer") != std::string::npos);
}

// Issue 33, item 10: every checkpoint damaged is no fresh start; a killed
// run's temporary file is cleaned at the next start; checkpoints order by step
// number past 10^8, where the name grows a digit.
TEST_CASE("train.resume_with_only_damaged_checkpoints_is_refused_and_stale_temporaries_cleaned") {
  Dir d("ort_train_ckpt_damaged");
  CliOutcome first = run_cli(mlp_args() + " --steps 2 --checkpoint-dir " + (d / "ck"), d.p.string());
  REQUIRE(first.exit_code == 0);
  auto all = list_checkpoints(d / "ck");
  REQUIRE(all.size() == 1);
  fs::resize_file(all[0], fs::file_size(all[0]) / 2);
  std::ofstream(d / "ck/ckpt-00000003.ortc.tmp.999999") << "half";
  CliOutcome resumed = run_cli(mlp_args() + " --steps 4 --resume --checkpoint-dir " + (d / "ck"), d.p.string());
  INFO(resumed.stderr_text);
  CHECK(resumed.exit_code == 1);
  CHECK_THAT(resumed.stderr_text, Catch::Contains("none of the 1 checkpoint(s)"));
  CHECK_FALSE(fs::exists(d / "ck/ckpt-00000003.ortc.tmp.999999"));

  fs::remove_all(d / "order");
  fs::create_directories(d / "order");
  for (const char* name : {"ckpt-99999999.ortc", "ckpt-100000000.ortc", "ckpt-00000007.ortc", "ckpt-x.ortc"})
    std::ofstream(d / (std::string("order/") + name)) << "";
  auto ordered = list_checkpoints(d / "order");
  REQUIRE(ordered.size() == 3);  // ckpt-x is no checkpoint name
  CHECK(fs::path(ordered[0]).filename() == "ckpt-100000000.ortc");
  CHECK(fs::path(ordered[2]).filename() == "ckpt-00000007.ortc");
}

TEST_CASE("train.epochs_count_passes_over_the_data") {
  Dir d("ort_train_epochs");
  // The MLP's data folder holds one batch: 3 epochs are 3 steps.
  CliOutcome o = run_cli(mlp_args() + " --epochs 3 --metrics " + (d / "m.jsonl"), d.p.string());
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  CHECK(loss_fields(d / "m.jsonl").size() == 3);
}

TEST_CASE("train.bad_options") {
  Dir d("ort_train_bad_train_options");
  CliOutcome o = run_cli(mlp_args("adagrad") + " --steps 2", d.p.string());
  CHECK(o.exit_code != 0);
  CHECK(o.stderr_text.find("'adagrad' is not one of") != std::string::npos);
  // A diverging run stops with one message instead of training on NaN.
  std::string m = source_dir() + "/tests/models/mlp";
  CliOutcome nan = run_cli("--log-level warn --model " + m + "/model.onnx --config " + m + "/training.yaml --data " + m +
                               "/train_batches --optimizer sgd --lr 1e30 --steps 20 --device cpu", d.p.string());
  CHECK(nan.exit_code != 0);
  // (The gradients overflow before the loss does: the run stops before that update.)
  CHECK(nan.stderr_text.find("stop") != std::string::npos);
  if (!cuda_available()) {  // without a GPU (or a CUDA build) asking for one is refused with one message
    CliOutcome cuda = run_cli(mlp_args("adam", "warn", "cuda:0") + " --steps 2", d.p.string());
    CHECK(cuda.exit_code == 4);  // device unavailable (README's exit-code table)
    CHECK(cuda.stderr_text.find("--device cpu") != std::string::npos);
  }
  CliOutcome tpu = run_cli(mlp_args("adam", "warn", "tpu") + " --steps 2", d.p.string());
  CHECK(tpu.exit_code == 64);  // a bad command-line value (README's exit-code table)
  CHECK(tpu.stderr_text.find("is not cpu or cuda[:i]") != std::string::npos);
  CliOutcome r = run_cli(mlp_args() + " --steps 2 --resume", d.p.string());
  CHECK(r.exit_code != 0);
  CHECK(r.stderr_text.find("--resume needs --checkpoint-dir") != std::string::npos);
  // --export where nothing can be written (under a regular file) stops the
  // run before its first step, not after the training (issue 33, item 10).
  std::ofstream(d / "plain_file") << "x";
  CliOutcome e = run_cli(mlp_args("adam", "info") + " --steps 2 --export " + d / "plain_file/model.onnx", d.p.string());
  CHECK(e.exit_code != 0);
  CHECK(e.stderr_text.find("cannot write " + d / "plain_file/model.onnx") != std::string::npos);
  CHECK(e.stdout_text.find("step 1") == std::string::npos);
  CHECK(e.stderr_text.find("step 1") == std::string::npos);
}

TEST_CASE("train.precision_bf16") {
  // --precision bf16 trains the MLP with its GEMMs in bfloat16: the losses
  // follow float32's to bfloat16's precision, and differ (it did run).
  Dir d("ort_train_precision_bf16");
  CliOutcome f = run_cli(mlp_args("adam", "info") + " --steps 5 --metrics " + (d / "fp32.jsonl"), d.p.string());
  CliOutcome b = run_cli(mlp_args("adam", "info") + " --steps 5 --precision bf16 --metrics " + (d / "bf16.jsonl"),
                         d.p.string());
  REQUIRE(f.exit_code == 0);
  INFO(b.stderr_text);
  REQUIRE(b.exit_code == 0);
  CHECK(b.stdout_text.find("autocast: ") != std::string::npos);
  auto fl = loss_fields(d / "fp32.jsonl"), bl = loss_fields(d / "bf16.jsonl");
  REQUIRE(fl.size() == 5);
  REQUIRE(bl.size() == 5);
  CHECK(fl != bl);
  for (size_t i = 0; i < fl.size(); ++i) CHECK(std::stod(bl[i]) == Approx(std::stod(fl[i])).epsilon(0.02));
  // Resume is bit-exact in bfloat16 too: the checkpoint holds the float32
  // weights and optimizer state, from which the bfloat16 copies are cast.
  std::string bf16 = mlp_args() + " --precision bf16 --checkpoint-dir " + (d / "ck");
  REQUIRE(run_cli(bf16 + " --steps 3", d.p.string()).exit_code == 0);
  CliOutcome resumed = run_cli(bf16 + " --steps 6 --resume --metrics " + (d / "resumed.jsonl"), d.p.string());
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  REQUIRE(run_cli(mlp_args() + " --precision bf16 --steps 6 --metrics " + (d / "straight.jsonl"), d.p.string())
              .exit_code == 0);
  auto straight = loss_fields(d / "straight.jsonl");  // steps 1-6; the resumed run wrote steps 4-6
  REQUIRE(straight.size() == 6);
  CHECK(loss_fields(d / "resumed.jsonl") == std::vector<std::string>(straight.begin() + 3, straight.end()));
  CHECK(run_cli(mlp_args() + " --steps 1 --precision fp8", d.p.string()).exit_code != 0);
  // A bf16 checkpoint resumes in bf16 only, and says so first.
  CliOutcome other = run_cli(mlp_args() + " --checkpoint-dir " + (d / "ck") + " --steps 8 --resume", d.p.string());
  CHECK(other.exit_code != 0);
  CHECK(other.stderr_text.find("precision is 'bf16' in the checkpoint, 'fp32' here") != std::string::npos);
}

TEST_CASE("train.precision_fp16_scales_the_loss_and_skips_overflowing_steps") {
  // A scale far too high for float16: the first steps overflow, are skipped
  // (logged, the weights untouched: the loss repeats) and the scale halves
  // until the gradients fit; then training proceeds, growing the scale every
  // 3 clean steps. --metrics has the scale and the skips; resume across a
  // skip is bit-exact, the scaler's state coming from the checkpoint.
  Dir d("ort_train_precision_fp16");
  std::string m = source_dir() + "/tests/models/mlp";
  {
    std::ifstream in(m + "/training.yaml");
    std::ofstream out(d / "fp16.yaml");
    out << in.rdbuf() << "\nprecision: fp16\nloss_scale: {init_scale: 1.0e+9, growth_interval: 3}\n";
  }
  std::string args = "--log-level info --model " + m + "/model.onnx --config " + (d / "fp16.yaml") + " --data " + m +
                     "/train_batches --optimizer adam --lr 0.01 --device cpu";
  CliOutcome f = run_cli(args + " --steps 30 --metrics " + (d / "straight.jsonl"), d.p.string());
  INFO(f.stderr_text);
  REQUIRE(f.exit_code == 0);
  CHECK(f.stdout_text.find("fp16 loss scaling: initial scale 1e+09") != std::string::npos);
  CHECK(f.stdout_text.find("step 1: a gradient holds inf or NaN at loss scale 1000000000: update skipped") !=
        std::string::npos);
  std::ifstream in(d / "straight.jsonl");
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  REQUIRE(lines.size() == 30);
  CHECK(lines[0].find("\"loss_scale\": 1000000000, \"skipped\": 1") != std::string::npos);
  CHECK(lines[1].find("\"loss_scale\": 500000000, \"skipped\": 1") != std::string::npos);
  CHECK(lines.back().find("\"skipped\": 0") != std::string::npos);
  auto losses = loss_fields(d / "straight.jsonl");
  CHECK(losses[0] == losses[1]);        // skipped: the weights did not move
  CHECK(losses.back() != losses.front());  // and later steps trained
  // Resume from step 12 (a checkpoint written mid-run) to 30: the same losses bit for bit.
  std::string ck = args + " --checkpoint-dir " + (d / "ck");
  REQUIRE(run_cli(ck + " --steps 12", d.p.string()).exit_code == 0);
  CliOutcome resumed = run_cli(ck + " --steps 30 --resume --metrics " + (d / "resumed.jsonl"), d.p.string());
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  CHECK(loss_fields(d / "resumed.jsonl") == std::vector<std::string>(losses.begin() + 12, losses.end()));
  auto c = read_checkpoint(d / "ck/ckpt-00000030.ortc");
  REQUIRE(c.ok());
  bool has_scale = false;
  for (const auto& [name, t] : c->tensors) has_scale = has_scale || name == "scaler/scale";
  CHECK(has_scale);
  // loss_scale: without fp16 is read by nothing, and the run says so.
  CliOutcome bf16 = run_cli(args + " --steps 1 --precision bf16", d.p.string());
  CHECK(bf16.exit_code == 0);
  CHECK(bf16.stdout_text.find("loss_scale: is read by --precision fp16 only") != std::string::npos);
}

}  // namespace ort_train::testing
