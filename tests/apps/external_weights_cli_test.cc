// A model whose weights are in external data trains as the same model with
// its weights inline: `train` leaves large external weights in their file
// until the passes or the trainer need them (graph/mapped_external_data.h),
// and in a 16-bit LoRA run folds each frozen one to 16 bits after autocast
// rather than before. Full and LoRA fine-tuning, float32 and bf16.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kIn = 512, kHidden = 512, kOut = 16;  // fc1.weight: 1 MiB, mapped

// logits = relu(x @ fc1.weight^T) @ fc2.weight^T, nn.Linear's exported form;
// fc1.weight in weights.bin when `external`.
void write_model(const fs::path& dir, bool external) {
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  mp.add_opset_import()->set_version(17);
  auto* g = mp.mutable_graph();
  std::ofstream data;
  if (external) data.open(dir / "weights.bin", std::ios::binary);
  uint64_t offset = 0;
  auto weight = [&](const std::string& name, int64_t rows, int64_t cols, float scale, bool in_file) {
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < w.size(); ++i) w[i] = scale * static_cast<float>(static_cast<int64_t>(i * 7919 % 2001) - 1000) / 1000.f;
    auto* init = g->add_initializer();
    init->set_name(name);
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_dims(rows);
    init->add_dims(cols);
    const std::string bytes(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
    if (!in_file) {
      init->set_raw_data(bytes);
      return;
    }
    data.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : {std::pair<std::string, std::string>{"location", "weights.bin"},
                        {"offset", std::to_string(offset)},
                        {"length", std::to_string(bytes.size())}}) {
      auto* e = init->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    offset += bytes.size();
  };
  weight("fc1.weight", kHidden, kIn, 0.05f, external);
  weight("fc2.weight", kOut, kHidden, 0.05f, false);
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out, bool transpose) {
    auto* n = g->add_node();
    n->set_name(out + "_node");
    n->set_op_type(op);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    if (transpose) {
      auto* perm = n->add_attribute();
      perm->set_name("perm");
      perm->set_type(onnx::AttributeProto::INTS);
      perm->add_ints(1);
      perm->add_ints(0);
    }
  };
  node("Transpose", {"fc1.weight"}, "fc1_t", true);
  node("MatMul", {"x", "fc1_t"}, "h", false);
  node("Relu", {"h"}, "a", false);
  node("Transpose", {"fc2.weight"}, "fc2_t", true);
  node("MatMul", {"a", "fc2_t"}, "logits", false);
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_value(kIn);
  auto* out = g->add_output();
  out->set_name("logits");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  std::ofstream(dir / "model.onnx", std::ios::binary) << mp.SerializeAsString();
}

std::string losses(const std::string& metrics) {
  std::ifstream f(metrics);
  std::string line, all;
  while (std::getline(f, line)) {
    auto row = nlohmann::json::parse(line);
    all += row.at("loss").dump() + "/" + row.at("grad_norm").dump() + " ";
  }
  return all;
}

}  // namespace

TEST_CASE("cli.weights_in_external_data_train_as_inline_ones", "[lora][external_data]") {
  Dir ws("ort_train_cli_external_weights");
  fs::create_directories(ws.p / "inline");
  fs::create_directories(ws.p / "external");
  write_model(ws.p / "inline", false);
  write_model(ws.p / "external", true);
  REQUIRE(fs::file_size(ws.p / "external/weights.bin") == kHidden * kIn * 4);
  const std::string base = "inputs: [{name: x, dtype: float32, shape: [batch, 512]}]\n"
                           "labels: [{name: labels, dtype: float32, shape: [batch, 16]}]\n"
                           "loss: {type: mse, input: logits, target: labels}\nbatch_size: 4\n";
  std::ofstream(ws / "full.yaml") << base;
  std::ofstream(ws / "lora.yaml") << base << "lora: {targets: [fc1.weight, fc2.weight], rank: 4, alpha: 8}\n";
  for (const std::string config : {"full", "lora"}) {
    for (const std::string precision : {"fp32", "bf16"}) {
      std::vector<std::string> runs;
      for (const std::string form : {"inline", "external"}) {
        const std::string metrics = ws / (config + precision + form + ".jsonl");
        CliOutcome o = run_cli("--model " + ws / (form + "/model.onnx") + " --config " + ws / (config + ".yaml") +
                                   " --data synthetic --steps 3 --device cpu --deterministic --optimizer AdamW"
                                   " --lr 0.01 --precision " + precision + " --metrics " + metrics,
                               ws.p.string());
        INFO(config << " " << precision << " " << form << ": " << o.stdout_text << o.stderr_text);
        REQUIRE(o.exit_code == 0);
        runs.push_back(losses(metrics));
      }
      INFO(config << " " << precision);
      REQUIRE_FALSE(runs[0].empty());
      CHECK(runs[0] == runs[1]);
    }
  }
}

// Weights mapped from their file are read in only when the memory budget
// holds them: past --max-memory the run stops before reading, naming the
// budget (a sparse file can claim terabytes that cost its author nothing).
TEST_CASE("cli.external_weights_beyond_max_memory_are_refused_before_they_are_read", "[external_data][hostile]") {
  Dir ws("ort_train_cli_external_weights_budget");
  write_model(ws.p, true);
  std::ofstream(ws / "full.yaml") << "inputs: [{name: x, dtype: float32, shape: [batch, 512]}]\n"
                                     "labels: [{name: labels, dtype: float32, shape: [batch, 16]}]\n"
                                     "loss: {type: mse, input: logits, target: labels}\nbatch_size: 4\n";
  CliOutcome o = run_cli("--model " + ws / "model.onnx" + " --config " + ws / "full.yaml" +
                             " --data synthetic --steps 1 --device cpu --max-memory 512K",
                         ws.p.string());
  INFO(o.stdout_text << o.stderr_text);
  CHECK(o.exit_code != 0);
  CHECK_THAT(o.stderr_text, Catch::Contains("weights in external data need 1.0 MiB") &&
                                Catch::Contains("more than the memory budget of 0.5 MiB"));
}

}  // namespace ort_train::testing
