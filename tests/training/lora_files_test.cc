// training/lora_files.h: adapters out in PEFT's layout and back in, and an
// adapters file that does not fit the model refused by key, changing nothing.
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "autodiff/training_graph.h"
#include "test_util.h"
#include "training/lora_files.h"
#include "training/safetensors.h"

namespace ort_train::testing {
namespace {

struct LoraRun {
  TrainingGraph tg;
  LoraTensors lora;
};

// The MLP's fc1 and fc2 adapted at rank 3, fc1.bias trained too.
LoraRun mlp_lora(uint64_t seed = 5) {
  auto model = load_model(source_dir() + "/tests/models/mlp/model.onnx");
  REQUIRE(model.ok());
  auto desc = parse_description(R"(
inputs: [{name: x, dtype: float32, shape: [batch, 32]}]
labels: [{name: labels, dtype: float32, shape: [batch, 10]}]
loss: {type: mse, input: logits, target: labels}
dims: {batch: 4}
lora: {targets: ["fc1.weight", "fc2.weight"], rank: 3, alpha: 6, train_also: [fc1.bias]}
)", "", "lora.yaml");
  REQUIRE(desc.ok());
  desc->seed = static_cast<int64_t>(seed);
  auto tg = build_training_graph(std::move(model).value(), *desc);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  LoraRun run{std::move(tg).value(), {}};
  run.lora.plan = &run.tg.lora;
  for (const std::string& name : run.tg.selection.trainable) {
    run.lora.values[name] = run.tg.model.graph.initializers.at(name);
    if (name == "fc1.bias") run.lora.train_also.push_back(name);
  }
  return run;
}

void randomize(LoraTensors& lora, uint64_t seed) {
  for (auto& [name, t] : lora.values) {
    Tensor r = random_tensor(t.dims(), seed++);
    std::memcpy(t.raw(), r.raw(), t.nbytes());
  }
}

}  // namespace

TEST_CASE("lora files: adapters go out in PEFT's layout with adapter_config.json and come back the same",
          "[lora][safetensors]") {
  Dir dir("ort_train_lora_files_roundtrip");
  LoraRun out = mlp_lora();
  randomize(out.lora, 40);
  const std::string path = dir / "adapter_model.safetensors";
  REQUIRE(write_peft_adapters(path, out.lora).ok());
  auto bytes = open_readable_file(path);
  REQUIRE(bytes.ok());
  auto header = read_safetensors_header(**bytes);
  REQUIRE(header.ok());
  // nn.Linear(32, 64)'s lora_A is Linear(32, 3): weight [3, 32]; lora_B Linear(3, 64): [64, 3].
  CHECK(header->entries.at("base_model.model.fc1.lora_A.weight").dims == Dims{3, 32});
  CHECK(header->entries.at("base_model.model.fc1.lora_B.weight").dims == Dims{64, 3});
  CHECK(header->entries.at("base_model.model.fc2.lora_A.weight").dims == Dims{3, 64});
  CHECK(header->entries.at("base_model.model.fc1.bias").dims == Dims{64});
  CHECK(header->entries.size() == 5);
  // lora_A.weight is Aᵀ.
  const Tensor& a = out.lora.values.at(out.tg.lora.adapters[0].a);
  auto file_a = read_safetensors_tensor(**bytes, header->entries.at("base_model.model.fc1.lora_A.weight"));
  REQUIRE(file_a.ok());
  CHECK(file_a->data<float>()[1 * 32 + 7] == a.data<float>()[7 * 3 + 1]);
  std::ifstream config_file(dir / "adapter_config.json");
  nlohmann::json config = nlohmann::json::parse(config_file);
  CHECK(config["peft_type"] == "LORA");
  CHECK(config["r"] == 3);
  CHECK(config["lora_alpha"] == 6);
  CHECK(config["target_modules"] == nlohmann::json({"fc1", "fc2"}));

  LoraRun in = mlp_lora(99);  // another seed: its A differs until read
  REQUIRE(read_peft_adapters(path, in.lora).ok());
  for (const auto& [name, t] : out.lora.values) {
    INFO(name);
    require_close(in.lora.values.at(name), t, 0, 0);
    // Read in place: the graph's own initializer holds the values.
    CHECK(in.tg.model.graph.initializers.at(name).raw() == in.lora.values.at(name).raw());
  }
}

TEST_CASE("lora files: an adapters file that does not fit is refused by key, and nothing is changed",
          "[lora][safetensors][hostile]") {
  Dir dir("ort_train_lora_files_hostile");
  LoraRun good = mlp_lora();
  randomize(good.lora, 40);
  std::map<std::string, Tensor> tensors;
  {
    const std::string path = dir / "good.safetensors";
    REQUIRE(write_peft_adapters(path, good.lora).ok());
    auto bytes = open_readable_file(path);
    auto header = read_safetensors_header(**bytes);
    for (const auto& [key, e] : header->entries) tensors[key] = *read_safetensors_tensor(**bytes, e);
  }
  struct Bad {
    const char* what;
    std::function<void(std::map<std::string, Tensor>&)> edit;
    const char* expect;
  };
  const std::string a1 = "base_model.model.fc1.lora_A.weight";
  const Bad cases[] = {
      {"another rank", [&](auto& t) { t[a1] = random_tensor({4, 32}, 1); },
       "key 'base_model.model.fc1.lora_A.weight' has shape [4,32]; this model and lora.rank 3 need [3,32]"},
      {"an integer dtype", [&](auto& t) { t[a1] = Tensor::host(DType::kInt64, {3, 32}); },
       "key 'base_model.model.fc1.lora_A.weight' is I64"},
      {"a missing key", [&](auto& t) { t.erase("base_model.model.fc2.lora_B.weight"); },
       "key 'base_model.model.fc2.lora_B.weight' is missing"},
      {"an extra key", [&](auto& t) { t["base_model.model.fc3.lora_A.weight"] = random_tensor({3, 64}, 2); },
       "key 'base_model.model.fc3.lora_A.weight' is no adapter of this model"},
  };
  for (const Bad& b : cases) {
    INFO(b.what);
    auto edited = tensors;
    b.edit(edited);
    const std::string path = dir / "bad.safetensors";
    REQUIRE(write_safetensors(path, edited, {}).ok());
    LoraRun in = mlp_lora(99);
    std::map<std::string, Tensor> before;
    for (const auto& [name, t] : in.lora.values) before[name] = t.clone();
    Status st = read_peft_adapters(path, in.lora);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(), Catch::Contains(b.expect));
    for (const auto& [name, t] : before) require_close(in.lora.values.at(name), t, 0, 0);
  }
  {
    INFO("a truncated file");
    std::ifstream f(dir / "good.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "cut.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    LoraRun in = mlp_lora(99);
    Status st = read_peft_adapters(dir / "cut.safetensors", in.lora);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.message(), Catch::Contains("cut.safetensors"));
  }
}

}  // namespace ort_train::testing
