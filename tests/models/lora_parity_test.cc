// LoRA against PEFT (issue 53): a Llama and a BERT from the dynamo exporter,
// rank-4 adapters on the attention projections. ort_train starts from the
// adapters PEFT saved (--adapters) and must follow PEFT + PyTorch's 10-step
// AdamW trajectory within 1e-4, and export adapters within 1e-3 of PEFT's
// final ones, key for key (tools/peft_reference.py writes the references).
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "training/safetensors.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

std::map<std::string, Tensor> read_all(const std::string& path) {
  auto bytes = open_readable_file(path);
  REQUIRE(bytes.ok());
  auto header = read_safetensors_header(**bytes);
  INFO(header.status().message());
  REQUIRE(header.ok());
  std::map<std::string, Tensor> out;
  for (const auto& [key, e] : header->entries) out[key] = *read_safetensors_tensor(**bytes, e);
  return out;
}

}  // namespace

TEST_CASE("lora parity: ort_train follows PEFT's trajectory and exports PEFT's adapters", "[lora][parity]") {
  for (const char* name : {"llama_plain", "bert_plain"}) {
    INFO(name);
    const std::string folder = source_dir() + "/tests/models/dynamo/" + name;
    Dir ws(std::string("ort_train_lora_parity_") + name);
    CliOutcome o = run_cli("--config " + folder + "/lora/lora.yaml --data " + folder + "/train_batches --adapters " +
                               folder + "/lora/start/adapter_model.safetensors --steps 10 --device cpu --metrics " +
                               ws / "m.jsonl" + " --export-adapters " + ws / "out/adapter_model.safetensors",
                           ws.p.string());
    INFO(o.stderr_text);
    REQUIRE(o.exit_code == 0);
    std::ifstream ref_file(folder + "/lora/trajectory.json");
    const auto reference = nlohmann::json::parse(ref_file).at("losses").get<std::vector<double>>();
    std::ifstream metrics(ws / "m.jsonl");
    std::vector<double> ours;
    for (std::string line; std::getline(metrics, line);) ours.push_back(nlohmann::json::parse(line).at("loss"));
    REQUIRE(ours.size() == reference.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      INFO("step " << i + 1 << ": ort_train " << ours[i] << ", PEFT " << reference[i]);
      CHECK(std::abs(ours[i] - reference[i]) < 1e-4);
    }
    CHECK(reference.back() < reference.front() - 1e-3);  // the trajectory goes somewhere
    const auto peft = read_all(folder + "/lora/final/adapter_model.safetensors");
    const auto exported = read_all(ws / "out/adapter_model.safetensors");
    REQUIRE(exported.size() == peft.size());
    for (const auto& [key, t] : peft) {
      INFO(key);
      REQUIRE(exported.count(key) == 1);
      require_close(exported.at(key), t, 0, 1e-3);
    }
  }
}

TEST_CASE("lora parity: --precision bf16 starts from the adapters given, as float32 does", "[lora][parity]") {
  // The 16-bit copies of A and B were rounded when the step graph was built,
  // before --adapters was read: the first step ran on fresh adapters (the
  // base model's loss) and only later ones on the file's.
  const std::string folder = source_dir() + "/tests/models/dynamo/llama_plain";
  Dir ws("ort_train_lora_parity_bf16");
  CliOutcome o = run_cli("--config " + folder + "/lora/lora.yaml --data " + folder + "/train_batches --adapters " +
                             folder + "/lora/start/adapter_model.safetensors --steps 1 --precision bf16 --device cpu "
                             "--metrics " + ws / "m.jsonl",
                         ws.p.string());
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  std::ifstream ref_file(folder + "/lora/trajectory.json");
  const double reference = nlohmann::json::parse(ref_file).at("losses").at(0).get<double>();
  std::ifstream metrics(ws / "m.jsonl");
  std::string line;
  REQUIRE(std::getline(metrics, line));
  const double first = nlohmann::json::parse(line).at("loss").get<double>();
  INFO("bf16 " << first << ", PEFT float32 " << reference);
  CHECK(std::abs(first - reference) < 2e-3);  // the base model's loss is 0.017 away
}

}  // namespace ort_train::testing
