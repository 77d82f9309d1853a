// The model description parser: the spec's example parses; YAML and JSON give
// the same result; every bad key or value is named in the error.
#include "configs/model_description.h"
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("description.spec_example_parses") {
  const char* text = R"(
model: bert.onnx
inputs:
  - {name: input_ids,      dtype: int64, shape: [batch, seq], range: [0, 30522]}
  - {name: attention_mask, dtype: int64, shape: [batch, seq]}
labels:
  - {name: labels, dtype: int64, shape: [batch, seq]}
dims: {seq: 128}
loss:
  type: softmax_cross_entropy
  input: logits
  target: labels
  reduction: mean
  ignore_index: -100
trainable:
  exclude: ["*.running_mean", "pos_encoder.pe"]
optimizer:
  name: lamb
  lr: 1.0e-4
  betas: [0.9, 0.999]
  eps: 1.0e-6
  weight_decay: 0.01
  no_decay: ["*bias", "*LayerNorm*"]
  mode: torch
  max_grad_norm: 1.0
schedule: {type: linear, warmup_steps: 100, total_steps: 10000}
steps: 1000
batch_size: 32
grad_accum: 1
data: {train: data/train.npz, shuffle: true}
)";
  auto d = parse_description(text, "/models", "bert.yaml");
  INFO(d.status().message());
  REQUIRE(d.ok());
  CHECK(d->model == "/models/bert.onnx");
  REQUIRE(d->inputs.size() == 2);
  CHECK(d->inputs[0].dtype == DType::kInt64);
  CHECK(d->inputs[0].shape == Shape{Dim(std::string("batch")), Dim(std::string("seq"))});
  CHECK(d->inputs[0].range->second == 30522);
  CHECK(d->dims.at("seq") == 128);
  CHECK(d->loss->type == "softmax_cross_entropy");
  CHECK(d->loss->ignore_index == -100);
  CHECK(d->trainable.exclude.size() == 2);
  CHECK(d->optimizer.name == "Lamb");
  CHECK(d->optimizer.betas->second == Approx(0.999));
  CHECK(d->schedule.total_steps == 10000);
  CHECK(d->data.train == "/models/data/train.npz");
}

TEST_CASE("description.lora_reads_peft_names_and_defaults") {
  auto d = parse_description(R"(
lora:
  targets: ["*q_proj*", "*v_proj*"]
  rank: 16
  alpha: 32
  dropout: 0.05
  train_also: ["*bias"]
)", "", "lora.yaml");
  INFO(d.status().message());
  REQUIRE(d.ok());
  REQUIRE(d->lora);
  CHECK(d->lora->targets == std::vector<std::string>{"*q_proj*", "*v_proj*"});
  CHECK(d->lora->rank == 16);
  CHECK(d->lora->alpha == 32);
  CHECK(d->lora->dropout == Approx(0.05));
  CHECK(d->lora->train_also == std::vector<std::string>{"*bias"});
  // PEFT's LoraConfig defaults: r 8, lora_alpha 8, lora_dropout 0.
  auto defaults = parse_description("lora: {targets: [q]}", "", "lora.yaml");
  REQUIRE(defaults.ok());
  CHECK(defaults->lora->rank == 8);
  CHECK(defaults->lora->alpha == 8);
  CHECK(defaults->lora->dropout == 0);
  CHECK(defaults->lora->train_also.empty());
  CHECK_FALSE(parse_description("steps: 3", "", "x.yaml")->lora);
}

TEST_CASE("description.json_reads_like_yaml") {
  auto y = parse_description("loss: {output: loss}\ninputs:\n  - {name: x, dtype: float32, shape: [batch, 4]}\n", "");
  auto j = parse_description(R"({"loss": {"output": "loss"}, "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", 4]}]})", "");
  REQUIRE(y.ok());
  REQUIRE(j.ok());
  CHECK(y->loss->output == j->loss->output);
  CHECK(y->inputs[0].shape == j->inputs[0].shape);
}

TEST_CASE("description.loss_scale_has_grad_scaler_defaults") {
  auto none = parse_description("precision: fp16\n", "");
  REQUIRE(none.ok());
  CHECK(none->precision == DType::kFloat16);
  CHECK_FALSE(none->has_loss_scale);
  CHECK(none->loss_scale.init_scale == 65536.0);
  CHECK(none->loss_scale.growth_factor == 2.0);
  CHECK(none->loss_scale.backoff_factor == 0.5);
  CHECK(none->loss_scale.growth_interval == 2000);
  auto some = parse_description("loss_scale: {init_scale: 1024, growth_interval: 10}\n", "");
  REQUIRE(some.ok());
  CHECK(some->has_loss_scale);
  CHECK(some->loss_scale.init_scale == 1024.0);
  CHECK(some->loss_scale.growth_interval == 10);
  CHECK(some->loss_scale.backoff_factor == 0.5);
}

TEST_CASE("description.errors_name_the_key") {
  struct Bad {
    const char* text;
    const char* expect;
  };
  for (const Bad& b : {
           Bad{"optimiser: {name: Adam}", "optimiser: unknown key"},
           Bad{"optimizer: {name: Adagrad}", "optimizer.name: 'Adagrad' is not one of"},
           Bad{"optimizer: {lr: fast}", "optimizer.lr: expected a number"},
           Bad{"optimizer: {betas: [0.9]}", "optimizer.betas: expected a list of two numbers"},
           Bad{"loss: {type: hinge, input: y, target: t}", "loss.type: 'hinge'"},
           Bad{"loss: {output: l, type: mse}", "give exactly one of"},
           Bad{"loss: {type: mse, input: y}", "loss.target: missing"},
           Bad{"loss: {type: mse, input: y, target: t, ignore_index: 1}", "loss.ignore_index: only applies"},
           Bad{"inputs: [{name: x, dtype: complex64}]", "inputs[0].dtype"},
           Bad{"inputs: [{name: x, sizes: [1]}]", "inputs[0].sizes: unknown key"},
           Bad{"steps: -3", "steps: expected a positive integer"},
           Bad{"schedule: {type: step}", "schedule.type: 'step'"},
           Bad{"trainable: {only: [a]}", "trainable.only: unknown key"},
           Bad{"trainable: {include: a}", "trainable.include: expected a list of strings"},
           Bad{"embeddings: [a]", "embeddings: expected a mapping"},
           Bad{"embeddings: {w: {padding_idx: x}}", "embeddings.w.padding_idx: expected an integer"},
           Bad{"embeddings: {w: {}}", "embeddings.w: expected padding_idx"},
           Bad{"data: {train: x.npz, shuffle: maybe}", "data.shuffle: expected true or false"},
           Bad{"inputs: [unclosed", "not valid YAML/JSON"},
           // Found by fuzz_description: std::stoll threw and the process aborted.
           Bad{"inputs: [{name: x, shape: [99999999999999999999]}]", "inputs[0].shape[0]: size 99999999999999999999 is out of range"},
           Bad{"? [a]: 1", "top level: expected a key name"},
           // Issue 52, a further round: a negative size was a dim named "-10"; an empty range.
           Bad{"inputs: [{name: x, shape: [batch, -10]}]", "inputs[0].shape[1]: size -10 is negative"},
           Bad{"inputs: [{name: x, range: [60, 3]}]", "inputs[0].range: [60, 3] is empty"},
           // lora: PEFT's LoraConfig names and checks.
           Bad{"lora: {rank: 8}", "lora.targets: missing"},
           Bad{"lora: {targets: []}", "lora.targets: expected at least one glob"},
           Bad{"lora: {targets: q_proj}", "lora.targets: expected a list of strings"},
           Bad{"lora: {targets: [q], rank: 0}", "lora.rank: expected a positive integer"},
           Bad{"lora: {targets: [q], rank: 100000}", "lora.rank: 100000 is above 65536"},
           Bad{"lora: {targets: [q], alpha: -1}", "lora.alpha: expected a positive number"},
           Bad{"lora: {targets: [q], alpha: .nan}", "lora.alpha: expected a finite number"},
           Bad{"lora: {targets: [q], dropout: 1}", "lora.dropout: expected a number in [0, 1)"},
           Bad{"lora: {targets: [q], r: 8}", "lora.r: unknown key"},
           Bad{"loss_scale: {init: 1024}", "loss_scale.init: unknown key"},
           Bad{"loss_scale: {init_scale: -1}", "loss_scale.init_scale: expected a positive number"},
           Bad{"loss_scale: {backoff_factor: 2}", "loss_scale.backoff_factor: expected less than 1"},
           Bad{"loss_scale: {growth_interval: 0}", "loss_scale.growth_interval: expected a positive integer"},
           // A second key of the same name was read as nothing: the first won, unvalidated.
           Bad{"steps: 3\nsteps: 5", "steps: duplicate key"},
           Bad{"optimizer: {name: Adam, lr: 0.1, lr: 0.2}", "optimizer.lr: duplicate key"},
           Bad{"optimizer: {lr: .nan}", "optimizer.lr: expected a finite number"},
           // Issue 52, items 6 and 9: every number finite and in its range, nested maps without duplicates.
           Bad{"optimizer: {betas: [.nan, .nan]}", "optimizer.betas[0]: expected a finite number"},
           Bad{"optimizer: {betas: [0.9, 1.0]}", "optimizer.betas[1]: expected a number in [0, 1)"},
           Bad{"optimizer: {lr: -0.1}", "optimizer.lr: expected a number in [0,"},
           Bad{"optimizer: {max_grad_norm: 0}", "optimizer.max_grad_norm: expected a number in"},
           Bad{"optimizer: {ratio_min: 2, ratio_max: 1}", "optimizer.ratio_min: is above optimizer.ratio_max"},
           Bad{"schedule: {type: poly, lr_end: .inf}", "schedule.lr_end: expected a finite number"},
           Bad{"schedule: {type: poly, lr_end: -1}", "schedule.lr_end: expected a number in [0,"},
           Bad{"data: {train: t.bin, tokens: {fill: {mask: .nan}}}", "data.tokens.fill.mask: expected a finite number"},
           Bad{"data: {train: t.bin, tokens: {fill: {mask: 1, mask: 2}}}", "data.tokens.fill.mask: duplicate key"},
           Bad{"dims: {seq: 8, seq: 16}", "dims.seq: duplicate key"},
       }) {
    auto d = parse_description(b.text, "", "desc.yaml");
    INFO(b.text);
    REQUIRE_FALSE(d.ok());
    INFO(d.status().message());
    CHECK(d.status().message().find(b.expect) != std::string::npos);
    CHECK(d.status().message().find("desc.yaml") != std::string::npos);
  }
}

}  // namespace ort_train::testing

TEST_CASE("description errors carry the line and column of the offending node") {
  // YAML: the unknown key on line 3, the bad number on line 5 (column of the value).
  const std::string yaml = "loss: {output: loss}\n"
                           "optimizer:\n"
                           "  nme: Adam\n";
  auto bad_key = ort_train::parse_description(yaml, "", "bert.yaml");
  REQUIRE_FALSE(bad_key.ok());
  CHECK(bad_key.status().message().find("bert.yaml:3:3: optimizer.nme: unknown key") != std::string::npos);
  auto bad_number = ort_train::parse_description("loss: {output: loss}\n\n\noptimizer:\n  lr: fast\n", "", "bert.yaml");
  REQUIRE_FALSE(bad_number.ok());
  CHECK(bad_number.status().message().find("bert.yaml:5:7: optimizer.lr: expected a number, got 'fast'") !=
        std::string::npos);
  // JSON is YAML to the parser: positions there too (line 1, the value of "steps").
  auto json = ort_train::parse_description(R"({"loss": {"output": "loss"}, "steps": -2})", "", "run.json");
  REQUIRE_FALSE(json.ok());
  CHECK(json.status().message().find("run.json:1:39: steps: expected a positive integer") != std::string::npos);
}
