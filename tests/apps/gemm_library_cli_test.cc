// --gemm-library through the binary: measured (in situ) starts as OpenBLAS
// does and trains the same first loss, and a run resumed with another setting
// follows the checkpoint folder's choices, bit for bit with the run it
// continues.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;

namespace {

std::vector<double> losses_in(const std::string& path) {
  std::vector<double> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);) out.push_back(nlohmann::json::parse(l).at("loss").get<double>());
  return out;
}

}  // namespace

TEST_CASE("cli.gemm_library_measured_records_its_choices_and_a_resume_follows_them", "[gemm_backend]") {
  Dir d("ort_train_cli_gemm_library");
  const std::string m = source_dir() + "/tests/models/mlp";
  const std::string args = "--log-level info --model " + m + "/model.onnx --config " + m + "/training.yaml --data " +
                           m + "/train_batches --optimizer adam --lr 0.01 --device cpu";
  CliOutcome measured = run_cli(args + " --steps 6 --gemm-library measured --kernel-choices " + (d / "choices.json") +
                                    " --metrics " + (d / "measured.jsonl"),
                                d.p.string());
  INFO(measured.stdout_text << measured.stderr_text);
  REQUIRE(measured.exit_code == 0);
  CHECK_THAT(measured.stdout_text + measured.stderr_text,
             Catch::Contains("CPU GEMMs: OpenBLAS kernels") && Catch::Contains("the faster per shape"));
  CliOutcome openblas = run_cli(args + " --steps 6 --metrics " + (d / "openblas.jsonl"), d.p.string());
  REQUIRE(openblas.exit_code == 0);
  auto a = losses_in(d / "measured.jsonl"), b = losses_in(d / "openblas.jsonl");
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 6);
  // The first step's GEMMs are OpenBLAS's (a candidate computes real outputs
  // only after its gate, which this small model's first step cannot afford);
  // later ones may be oneDNN's, within float32 rounding.
  CHECK(a[0] == b[0]);
  for (size_t i = 1; i < 6; ++i) CHECK(std::abs(a[i] - b[i]) <= 1e-4 * std::abs(b[i]) + 1e-6);
  // A run stopped at step 3 and resumed under the default setting follows the
  // folder's choices (here oneDNN for every Gemm, from a file).
  {
    std::ofstream f(d / "forced.json");
    f << R"({"device": "cpu", "choices": {"Gemm": "onednn"}})";
  }
  CliOutcome straight = run_cli(args + " --steps 6 --kernel-choices " + (d / "forced.json") + " --metrics " +
                                    (d / "straight.jsonl"),
                                d.p.string());
  INFO(straight.stderr_text);
  REQUIRE(straight.exit_code == 0);
  CliOutcome first = run_cli(args + " --steps 3 --kernel-choices " + (d / "forced.json") + " --checkpoint-dir " +
                                 (d / "ck") + " --save-every 3",
                             d.p.string());
  REQUIRE(first.exit_code == 0);
  auto folder = nlohmann::json::parse(std::ifstream(d.p / "ck" / "kernel_choices.json")).at("choices");
  CHECK(folder.value("Gemm", "") == "onednn");
  CliOutcome resumed = run_cli(args + " --steps 6 --checkpoint-dir " + (d / "ck") + " --resume --metrics " +
                                   (d / "resumed.jsonl"),
                               d.p.string());
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  auto s = losses_in(d / "straight.jsonl"), r = losses_in(d / "resumed.jsonl");
  REQUIRE(s.size() == 6);
  REQUIRE(r.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(r[i] == s[i + 3]);
  // Forced to oneDNN, every step differs from OpenBLAS's by rounding only.
  for (size_t i = 0; i < 6; ++i) CHECK(std::abs(s[i] - b[i]) <= 1e-4 * std::abs(b[i]) + 1e-6);
  CliOutcome bad = run_cli(args + " --steps 1 --gemm-library mkl", d.p.string());
  CHECK(bad.exit_code == 64);
}

}  // namespace ort_train::testing
