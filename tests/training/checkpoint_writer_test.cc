// Checkpoints written in the background (training/checkpoint_writer.h): the
// file equals the one written in place, one write at a time, and a failed
// write is the error of the next call, never lost; through `train
// --async-checkpoint`, a resume is bit for bit and a failed write stops the run.
#include <filesystem>
#include <fstream>

#include "graph/onnx_io.h"
#include "test_util.h"
#include "training/checkpoint_writer.h"

namespace ort_train::testing {
namespace fs = std::filesystem;

namespace {

Checkpoint at_step(int64_t step) {
  Checkpoint c;
  c.step = step;
  c.micro_batch = 2 * step;
  c.fingerprint["model"] = "m";
  c.tensors.emplace_back("param/w", random_tensor({64, 33}, static_cast<uint64_t>(step)));
  return c;
}

std::string mlp_args() {
  std::string m = source_dir() + "/tests/models/mlp";
  return "--log-level info --model " + m + "/model.onnx --config " + m + "/training.yaml --data " + m +
         "/train_batches --optimizer adam --lr 0.01 --device cpu --threads 1";
}

}  // namespace

TEST_CASE("checkpoint_writer.background_files_equal_those_written_in_place") {
  Dir d("ort_train_checkpoint_writer");
  {
    CheckpointWriter now(d / "now", 2, false), later(d / "later", 2, true);
    for (int64_t step : {1, 2, 3}) {
      REQUIRE(now.write(at_step(step)).ok());
      REQUIRE(later.write(at_step(step)).ok());
    }
    REQUIRE(later.finish().ok());
    CHECK(later.finish().ok());  // nothing in flight: nothing to report twice
  }
  auto a = list_checkpoints(d / "now"), b = list_checkpoints(d / "later");
  REQUIRE(a.size() == 2);  // --keep 2
  REQUIRE(b.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(*read_file(a[i]) == *read_file(b[i]));
}

TEST_CASE("checkpoint_writer.a_failed_background_write_is_the_next_calls_error") {
  Dir d("ort_train_checkpoint_writer_fails");
  // A folder where the file must go: the rename fails.
  fs::create_directories(fs::path(checkpoint_path(d / "ck", 1)) / "in_the_way");
  CheckpointWriter w(d / "ck", 3, true);
  REQUIRE(w.write(at_step(1)).ok());  // accepted; the write runs on
  Status next = w.write(at_step(2));  // waits for it: its error
  REQUIRE_FALSE(next.ok());
  CHECK(next.message().find("the background checkpoint write failed") != std::string::npos);
  CHECK(w.finish().ok());  // the second was not started
  CHECK(list_checkpoints(d / "ck").size() == 1);  // only the folder in the way; no half-written file
  for (const auto& e : fs::directory_iterator(d / "ck")) CHECK(e.path().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("checkpoint_writer.train_async_resumes_bit_for_bit_and_stops_on_a_failed_write") {
  Dir d("ort_train_async_checkpoint_train");
  // Kernels chosen by timing (the GEMM library) are chosen by the first run for all three:
  // the resumed one reads them from the checkpoint folder.
  const std::string choices = " --kernel-choices " + (d / "choices.json");
  CliOutcome straight = run_cli(mlp_args() + " --steps 8 --metrics " + (d / "straight.jsonl") + choices, d.p.string());
  REQUIRE(straight.exit_code == 0);
  CliOutcome first = run_cli(mlp_args() + " --steps 8 --save-every 2 --async-checkpoint --checkpoint-dir " +
                                 (d / "ck") + " --metrics " + (d / "first.jsonl") + choices, d.p.string());
  INFO(first.stderr_text);
  REQUIRE(first.exit_code == 0);
  CHECK((first.stdout_text + first.stderr_text).find("the file is written in the background") != std::string::npos);
  // Resumed from step 4's checkpoint (the newer ones moved away), the run continues the straight one.
  for (int64_t step : {6, 8}) fs::remove(checkpoint_path(d / "ck", step));
  CliOutcome resumed = run_cli(mlp_args() + " --steps 8 --async-checkpoint --checkpoint-dir " + (d / "ck") +
                                   " --resume --metrics " + (d / "resumed.jsonl"), d.p.string());
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  auto lines = [](const std::string& path) {
    std::vector<std::string> out;
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);)
      if (l.find("\"loss\"") != std::string::npos) out.push_back(l.substr(0, l.find(", \"samples_per_s\"")));
    return out;
  };
  auto a = lines(d / "straight.jsonl"), b = lines(d / "resumed.jsonl");
  REQUIRE(a.size() == 8);
  REQUIRE(b.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(b[i] == a[i + 4]);
  // A write that fails in the background stops the run at the next step, by message.
  fs::create_directories(fs::path(checkpoint_path(d / "blocked", 2)) / "in_the_way");
  CliOutcome failed = run_cli(mlp_args() + " --steps 8 --save-every 2 --async-checkpoint --checkpoint-dir " +
                                  (d / "blocked"), d.p.string());
  INFO(failed.stderr_text);
  CHECK(failed.exit_code != 0);
  CHECK(failed.stderr_text.find("the background checkpoint write failed") != std::string::npos);
  // Seen before step 3 when the write has ended by then, at step 4's checkpoint (which waits for it) at the latest.
  CHECK((failed.stdout_text + failed.stderr_text).find("step 5/8") == std::string::npos);
}

}  // namespace ort_train::testing
