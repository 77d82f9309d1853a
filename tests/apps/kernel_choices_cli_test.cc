// The train command's measured kernel choices (runtime/kernel_choice.h) on
// the bundled BERT, whose attention_fusion makes one Attention per layer:
// the first step logs the choice, --kernel-choices forces a candidate for
// every shape of an op, the checkpoint folder keeps the run's choices, and a
// resumed run makes them again and continues bit for bit.
#include <fstream>

#include "test_util.h"
#include "training/checkpoint.h"

namespace ort_train::testing {
namespace {

std::string bert_args() {
  std::string m = source_dir() + "/tests/models/bert";
  return "--log-level info --model " + m + "/model.onnx --config " + m + "/training.yaml --data " + m +
         "/train_batches --optimizer adam --lr 0.001 --device cpu";
}

std::vector<std::string> losses(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    auto at = line.find("\"loss\":");
    if (at != std::string::npos) out.push_back(line.substr(at, line.find(',', at) - at));
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("train.kernel_choices_are_logged_forced_by_file_and_kept_for_resume") {
  Dir d("ort_train_kernel_choices_cli");
  CliOutcome measured = run_cli(bert_args() + " --steps 1", d.p.string());
  INFO(measured.stderr_text);
  REQUIRE(measured.exit_code == 0);
  std::string log = measured.stdout_text + measured.stderr_text;
  CHECK(log.find("kernel choice: Attention on cpu") != std::string::npos);
  CHECK(log.find("kernel choice: AttentionGrad on cpu") != std::string::npos);

  // The non-default candidate, forced for every shape: nothing is timed.
  std::ofstream(d / "forced.json") << R"({"device": "cpu", "choices": {"com.ort_train.Attention": "gemm",
                                          "com.ort_train.AttentionGrad": "gemm"}})";
  CliOutcome first = run_cli(bert_args() + " --steps 4 --save-every 2 --checkpoint-dir " + (d / "ck") +
                                 " --kernel-choices " + (d / "forced.json") + " --metrics " + (d / "a.jsonl"),
                             d.p.string());
  INFO(first.stderr_text);
  REQUIRE(first.exit_code == 0);
  CHECK((first.stdout_text + first.stderr_text).find("kernel choice:") == std::string::npos);
  std::string kept = read_text(d / "ck/kernel_choices.json");
  CHECK(kept.find("\"com.ort_train.Attention\": \"gemm\"") != std::string::npos);

  // Resume from step 2: the folder's choices come back, so steps 3-4 repeat bit for bit.
  auto all = list_checkpoints(d / "ck");
  REQUIRE(all.size() == 2);
  std::filesystem::remove(all[0]);
  CliOutcome resumed = run_cli(bert_args() + " --steps 4 --resume --checkpoint-dir " + (d / "ck") + " --metrics " +
                                   (d / "b.jsonl"),
                               d.p.string());
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  CHECK((resumed.stdout_text + resumed.stderr_text).find("kernel choice:") == std::string::npos);
  auto a = losses(d / "a.jsonl"), b = losses(d / "b.jsonl");
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 2);
  CHECK(b[0] == a[2]);
  CHECK(b[1] == a[3]);

  // A damaged file is refused with its name.
  std::ofstream(d / "bad.json") << "not json";
  CliOutcome bad = run_cli(bert_args() + " --steps 1 --kernel-choices " + (d / "bad.json"), d.p.string());
  CHECK(bad.exit_code != 0);
  CHECK(bad.stderr_text.find("bad.json") != std::string::npos);
}

}  // namespace ort_train::testing
