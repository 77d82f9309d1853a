// --gemm-library through the binary: measured records a choice per GEMM
// shape in --kernel-choices, and a run resumed with another setting follows
// the checkpoint folder's choices, bit for bit with the run it continues.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;

TEST_CASE("cli.gemm_library_measured_records_its_choices_and_a_resume_follows_them", "[gemm_backend]") {
  Dir d("ort_train_cli_gemm_library");
  const std::string m = source_dir() + "/tests/models/mlp";
  const std::string args = "--log-level info --model " + m + "/model.onnx --config " + m + "/training.yaml --data " +
                           m + "/train_batches --optimizer adam --lr 0.01 --device cpu";
  CliOutcome straight = run_cli(args + " --steps 6 --gemm-library measured --kernel-choices " + (d / "choices.json") +
                                    " --metrics " + (d / "straight.jsonl"),
                                d.p.string());
  INFO(straight.stdout_text << straight.stderr_text);
  REQUIRE(straight.exit_code == 0);
  CHECK_THAT(straight.stdout_text + straight.stderr_text,
             Catch::Contains("CPU GEMMs: OpenBLAS kernels") && Catch::Contains("the faster per shape"));
  std::ifstream f(d / "choices.json");
  auto choices = nlohmann::json::parse(f).at("choices");
  int gemms = 0;
  for (auto& [key, value] : choices.items())
    if (key.rfind("Gemm|cpu|", 0) == 0) {
      ++gemms;
      CHECK((value == "openblas" || value == "onednn"));
    }
  CHECK(gemms >= 3);  // the MLP's forward and backward GEMMs, one entry per shape
  // Stopped at step 3 and resumed under the default setting: the folder's choices are followed.
  CliOutcome first = run_cli(args + " --steps 3 --gemm-library measured --kernel-choices " + (d / "choices.json") +
                                 " --checkpoint-dir " + (d / "ck") + " --save-every 3",
                             d.p.string());
  REQUIRE(first.exit_code == 0);
  CliOutcome resumed = run_cli(args + " --steps 6 --checkpoint-dir " + (d / "ck") + " --resume --metrics " +
                                   (d / "resumed.jsonl"),
                               d.p.string());
  INFO(resumed.stderr_text);
  REQUIRE(resumed.exit_code == 0);
  auto lines = [](const std::string& path) {
    std::vector<std::string> out;
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);) out.push_back(nlohmann::json::parse(l).at("loss").dump());
    return out;
  };
  auto a = lines(d / "straight.jsonl"), b = lines(d / "resumed.jsonl");
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(b[i] == a[i + 3]);
  CliOutcome bad = run_cli(args + " --steps 1 --gemm-library mkl", d.p.string());
  CHECK(bad.exit_code == 64);
}

}  // namespace ort_train::testing
