// --recompute layers on a model as today's PyTorch exports it (the dynamo
// exporter, whose node names carry no module scope): its layers are found
// from the nodes' metadata, and the run trains bit for bit as without.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;

TEST_CASE("cli.recompute_layers_on_a_dynamo_export_trains_bit_for_bit_alike", "[recompute]") {
  Dir ws("ort_train_cli_recompute_dynamo");
  const std::string dir = source_dir() + "/tests/models/dynamo/gpt2_plain";
  std::vector<std::string> runs;
  for (const std::string mode : {"none", "layers"}) {
    CliOutcome o = run_cli("--model " + dir + "/model.onnx --config " + dir + "/training.yaml --data " + dir +
                               "/train_batches --steps 3 --device cpu --deterministic --optimizer AdamW --lr 0.01"
                               " --recompute " + mode + " --metrics " + ws / (mode + ".jsonl"),
                           ws.p.string());
    const std::string log = o.stdout_text + o.stderr_text;
    INFO(log);
    REQUIRE(o.exit_code == 0);
    if (mode == "layers") {
      CHECK_THAT(log, Catch::Contains("2 of 2 layers"));
      CHECK_THAT(log, !Catch::Contains("no layer found"));
    }
    std::ifstream f(ws / (mode + ".jsonl"));
    std::string line, losses;
    while (std::getline(f, line)) {
      auto row = nlohmann::json::parse(line);
      losses += row.at("loss").dump() + "/" + row.at("grad_norm").dump() + " ";
    }
    runs.push_back(losses);
  }
  REQUIRE_FALSE(runs[0].empty());
  REQUIRE(runs[0] == runs[1]);
}

}  // namespace ort_train::testing
