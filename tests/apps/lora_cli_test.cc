// LoRA through the binary: a fine-tune exports its adapters and the merged
// model; a run started from those adapters (--adapters) and a run of the
// merged model without adapters compute the same loss; the checkpoint holds
// only what trains; --adapters without lora: is refused.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "graph/onnx_io.h"
#include "test_util.h"
#include "training/checkpoint.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

// The loss of a metrics file's first step.
double first_loss(const std::string& metrics) {
  std::ifstream f(metrics);
  std::string line;
  REQUIRE(std::getline(f, line));
  return nlohmann::json::parse(line).at("loss").get<double>();
}

}  // namespace

TEST_CASE("cli.lora_adapters_out_and_in_and_the_merged_model_agree", "[lora]") {
  Dir ws("ort_train_cli_lora");
  const std::string model = source_dir() + "/tests/models/mlp/model.onnx";
  const std::string data = source_dir() + "/tests/models/mlp/train_batches";
  const std::string base = "inputs: [{name: x, dtype: float32, shape: [batch, 32]}]\n"
                           "labels: [{name: labels, dtype: float32, shape: [batch, 10]}]\n"
                           "loss: {type: mse, input: logits, target: labels}\n";
  std::ofstream(ws / "plain.yaml") << base;
  std::ofstream(ws / "lora.yaml") << base << "lora: {targets: [fc1.weight, fc2.weight], rank: 2, alpha: 4}\n";
  CliOutcome a = run_cli("--model " + model + " --config " + ws / "lora.yaml" + " --data " + data +
                             " --optimizer AdamW --lr 0.05 --steps 4 --device cpu --export " + ws / "merged.onnx" +
                             " --export-adapters " + ws / "out/adapter_model.safetensors" + " --checkpoint-dir " +
                             ws / "ck",
                         ws.p.string());
  INFO(a.stderr_text);
  REQUIRE(a.exit_code == 0);
  REQUIRE(fs::exists(ws / "out/adapter_config.json"));
  // The checkpoint holds the adapters and their optimizer state (AdamW's two
  // moments, flat over what trains), no base weight.
  const int64_t adapter_elements = 2 * 32 + 2 * 64 + 2 * 64 + 2 * 64;
  bool any_checkpoint = false;
  for (const auto& entry : fs::directory_iterator(ws / "ck")) {
    if (entry.path().extension() != ".ortc") continue;
    any_checkpoint = true;
    auto reader = open_checkpoint(entry.path().string());
    REQUIRE(reader.ok());
    int64_t params = 0;
    for (const auto& e : reader->entries()) {
      INFO(e.name);
      if (e.name.rfind("param/", 0) == 0) {
        CHECK(e.name.find(".lora_") != std::string::npos);
        params += num_elements(e.dims);
      } else if (e.name.rfind("state/", 0) == 0) {
        CHECK(num_elements(e.dims) == adapter_elements);
      }
    }
    CHECK(params == adapter_elements);
  }
  CHECK(any_checkpoint);
  // Resuming it under another alpha is refused: the same adapters would train other weights.
  std::ofstream(ws / "lora_alpha.yaml") << base << "lora: {targets: [fc1.weight, fc2.weight], rank: 2, alpha: 8}\n";
  CliOutcome other = run_cli("--model " + model + " --config " + ws / "lora_alpha.yaml" + " --data " + data +
                                 " --optimizer AdamW --lr 0.05 --steps 6 --device cpu --resume --checkpoint-dir " +
                                 ws / "ck",
                             ws.p.string());
  CHECK(other.exit_code != 0);
  CHECK_THAT(other.stderr_text, Catch::Contains("lora"));

  // From the exported adapters, nothing updated (lr 0): the loss of the trained adapters.
  CliOutcome b = run_cli("--model " + model + " --config " + ws / "lora.yaml" + " --data " + data +
                             " --adapters " + ws / "out/adapter_model.safetensors" +
                             " --optimizer Sgd --lr 0 --steps 1 --device cpu --metrics " + ws / "b.jsonl",
                         ws.p.string());
  INFO(b.stderr_text);
  REQUIRE(b.exit_code == 0);
  // The merged model, without adapters: the same loss.
  CliOutcome c = run_cli("--model " + ws / "merged.onnx" + " --config " + ws / "plain.yaml" + " --data " + data +
                             " --optimizer Sgd --lr 0 --steps 1 --device cpu --metrics " + ws / "c.jsonl",
                         ws.p.string());
  INFO(c.stderr_text);
  REQUIRE(c.exit_code == 0);
  // And a fresh LoRA run starts at the base model's loss (B is zero).
  CliOutcome d = run_cli("--model " + model + " --config " + ws / "lora.yaml" + " --data " + data +
                             " --optimizer Sgd --lr 0 --steps 1 --device cpu --metrics " + ws / "d.jsonl",
                         ws.p.string());
  CliOutcome e = run_cli("--model " + model + " --config " + ws / "plain.yaml" + " --data " + data +
                             " --optimizer Sgd --lr 0 --steps 1 --device cpu --metrics " + ws / "e.jsonl",
                         ws.p.string());
  REQUIRE(d.exit_code == 0);
  REQUIRE(e.exit_code == 0);
  const double adapted = first_loss(ws / "b.jsonl"), merged = first_loss(ws / "c.jsonl");
  const double fresh = first_loss(ws / "d.jsonl"), plain = first_loss(ws / "e.jsonl");
  CHECK(merged == Approx(adapted).epsilon(1e-5));
  CHECK(fresh == Approx(plain).epsilon(1e-6));
  CHECK(std::abs(adapted - plain) > 1e-3 * plain);  // the fine-tune moved the loss

  // inspect shows the adapters, their parameters and the trainable fraction:
  // 448 adapter elements over the MLP's 6922 and those 448.
  CliOutcome i = run_cli("inspect --model " + model + " --config " + ws / "lora.yaml" + " --batch-size 4", ws.p.string());
  INFO(i.stderr_text);
  REQUIRE(i.exit_code == 0);
  CHECK_THAT(i.stdout_text, Catch::Contains("LoRA: 2 adapters, rank 2, alpha 4 (scale 2), dropout 0; trainable params: "
                                            "448 || all params: 7370 || trainable%: 6.0787"));
  CHECK_THAT(i.stdout_text, Catch::Contains("fc1.lora_A [32,2], fc1.lora_B [2,64]"));
}

TEST_CASE("cli.lora_a_malformed_adapters_file_is_refused_by_key_and_nothing_is_written", "[lora][hostile]") {
  Dir ws("ort_train_cli_lora_bad_adapters");
  const std::string folder = source_dir() + "/tests/models/dynamo/llama_plain";
  // PEFT's own file for this model, then the same with one key's rank changed.
  std::ifstream good(folder + "/lora/start/adapter_model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(good)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 64);
  const std::string key = "base_model.model.model.model.layers.0.self_attn.q_proj.lora_A.weight";
  const size_t at = bytes.find("\"" + key + "\"");
  REQUIRE(at != std::string::npos);
  const size_t shape = bytes.find("\"shape\":[4,", at);
  REQUIRE(shape != std::string::npos);
  std::string wrong_rank = bytes;
  wrong_rank[shape + 9] = '5';  // [5, 32]: not the description's rank, nor the data's size
  std::ofstream(ws / "rank.safetensors", std::ios::binary) << wrong_rank;
  std::ofstream(ws / "cut.safetensors", std::ios::binary) << bytes.substr(0, 20);
  struct Case {
    std::string file, expect;
  };
  for (const Case& c : {Case{"rank.safetensors", key}, Case{"cut.safetensors", "cut.safetensors"}}) {
    INFO(c.file);
    CliOutcome o = run_cli("--config " + folder + "/lora/lora.yaml --data " + folder + "/train_batches --adapters " +
                               ws / c.file + " --steps 2 --device cpu --export " + ws / "out/merged.onnx" +
                               " --export-adapters " + ws / "out/adapters.safetensors" + " --metrics " +
                               ws / "out/m.jsonl",
                           ws.p.string());
    INFO(o.stderr_text);
    CHECK(o.exit_code != 0);
    CHECK_THAT(o.stderr_text, Catch::Contains(c.expect));
    for (const char* written : {"out/merged.onnx", "out/adapters.safetensors", "out/adapter_config.json", "out/m.jsonl"})
      CHECK_FALSE(fs::exists(ws / written));
  }
}

TEST_CASE("cli.lora_options_without_lora_are_refused", "[lora]") {
  Dir ws("ort_train_cli_lora_refused");
  std::ofstream(ws / "plain.yaml") << "inputs: [{name: x, dtype: float32, shape: [batch, 32]}]\n"
                                      "labels: [{name: labels, dtype: float32, shape: [batch, 10]}]\n"
                                      "loss: {type: mse, input: logits, target: labels}\n";
  const std::string model = source_dir() + "/tests/models/mlp/model.onnx";
  for (const std::string& flag : {"--adapters " + ws / "a.safetensors", "--export-adapters " + ws / "a.safetensors"}) {
    CliOutcome o = run_cli("--model " + model + " --config " + ws / "plain.yaml" +
                               " --data synthetic --batch-size 2 --steps 1 --optimizer Sgd " + flag,
                           ws.p.string());
    INFO(o.stderr_text);
    CHECK(o.exit_code != 0);
    CHECK_THAT(o.stderr_text, Catch::Contains("needs the description's lora:"));
    CHECK_FALSE(fs::exists(ws / "a.safetensors"));
  }
}

// Recompute copies the adapted layers' forward into the backward, adapters
// included: a Hugging Face BERT (TorchScript export, whose node scopes name
// its layers) trains bit for bit alike with --recompute layers and without.
TEST_CASE("cli.lora_with_recompute_trains_bit_for_bit_alike", "[lora]") {
  Dir ws("ort_train_cli_lora_recompute");
  const std::string dir = source_dir() + "/tests/models/hf/bert_opset14";
  std::ifstream base(dir + "/training.yaml");
  std::ofstream(ws / "lora.yaml") << base.rdbuf()
                                  << "\nlora: {targets: [\"*attention.self.query\", \"*attention.self.value\"], "
                                     "rank: 4, alpha: 8}\noptimizer: {name: AdamW, lr: 0.01}\n";
  std::vector<std::string> runs;
  for (const std::string mode : {"none", "layers"}) {
    CliOutcome o = run_cli("--model " + dir + "/model.onnx --config " + ws / "lora.yaml" + " --data " + dir +
                               "/train_batches --steps 3 --device cpu --deterministic --recompute " + mode +
                               " --metrics " + ws / (mode + ".jsonl"),
                           ws.p.string());
    const std::string log = o.stdout_text + o.stderr_text;
    INFO(log);
    REQUIRE(o.exit_code == 0);
    CHECK_THAT(log, Catch::Contains("LoRA: 4 adapters"));
    if (mode == "layers") CHECK_THAT(log, Catch::Contains("2 of 2 layers"));
    std::ifstream f(ws / (mode + ".jsonl"));
    std::string line, losses;
    while (std::getline(f, line)) {
      auto row = nlohmann::json::parse(line);
      losses += std::to_string(row.at("loss").get<double>()) + "/" + std::to_string(row.at("grad_norm").get<double>());
    }
    runs.push_back(losses);
  }
  REQUIRE_FALSE(runs[0].empty());
  REQUIRE(runs[0] == runs[1]);
}

}  // namespace ort_train::testing
