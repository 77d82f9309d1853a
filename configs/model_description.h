// The model description (YAML or JSON; yaml-cpp reads both): what the model's
// inputs and labels are, the loss, what trains, and the training settings.
// Every key is checked: an unknown key or a wrong value is an error naming the
// key and what was expected. The user-facing reference is docs/model_description.md.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "configs/loss_spec.h"
#include "graph/dtype.h"
#include "graph/shape.h"
#include "graph/status.h"

namespace ort_train {

struct TensorDecl {
  std::string name;
  DType dtype = DType::kFloat;
  Shape shape;                                   // symbolic dims by name ("batch", "seq")
  std::optional<std::pair<double, double>> range;  // synthetic data: values in [lo, hi)
};

struct OptimizerConfig {
  std::string name;  // Sgd | Adam | AdamW | Lamb (case-insensitive; normalized to this spelling)
  std::optional<double> lr;
  std::optional<std::pair<double, double>> betas;
  std::optional<double> eps;
  std::optional<double> weight_decay;
  std::vector<std::string> no_decay;
  std::optional<double> momentum;
  std::string mode;  // torch | huggingface
  std::optional<double> max_grad_norm;
  std::optional<double> ratio_min, ratio_max;
};

struct ScheduleConfig {
  std::string type = "constant";  // constant | linear | cosine | poly
  int64_t warmup_steps = 0;
  std::optional<int64_t> total_steps;
  std::optional<double> power;   // poly
  std::optional<double> lr_end;  // poly
  std::optional<double> num_cycles;  // cosine
};

// loss_scale: --precision fp16's dynamic loss scaling, with PyTorch
// GradScaler's names and defaults (training/loss_scaler.h).
struct LossScaleConfig {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

// How a token file (.bin) feeds the model (spec section 3): windows of
// seq + 1 tokens, seq being the size of input_ids' last dim.
struct TokenDataConfig {
  std::string input_ids = "input_ids";
  std::string labels = "labels";     // absent from the model: no labels
  bool shift_labels = true;          // labels are the next tokens; false: labels = input_ids
  std::map<std::string, double> fill;  // other inputs of input_ids' shape, one value throughout (attention_mask: 1)
  std::string dtype = "uint16";      // files without llm.c's header: uint16 | uint32
};

// trainable: which initializers train (autodiff/trainable_set.h decides the rest).
struct TrainableConfig {
  std::vector<std::string> include;  // globs on initializer names that train whatever the file suggests
  std::vector<std::string> exclude;  // globs that never train (wins over include)
  // lora.train_also, with lora: only initializers these globs match may train
  // (beside the adapters); every other is frozen, whatever the file suggests.
  std::optional<std::vector<std::string>> only;
};

// lora: low-rank adapters (Hu et al. 2021) with PEFT's LoraConfig names and
// defaults. The graph pass graph/passes/lora_adapters.cc adds them; every base
// initializer but train_also's is frozen.
struct LoraConfig {
  std::vector<std::string> targets;     // globs on the weights of MatMul, Gemm and 1x1 Conv (required)
  int64_t rank = 8;                     // PEFT's r
  double alpha = 8;                     // PEFT's lora_alpha: the update is (alpha / rank) * A B
  double dropout = 0;                   // PEFT's lora_dropout, on the adapter's input
  std::vector<std::string> train_also;  // globs of base initializers that still train
};

struct DataConfig {
  std::string train;  // path (relative to the description), glob, list file, or "synthetic"
  std::string eval;   // held-out data, evaluated at the end of training
  bool shuffle = true;
  TokenDataConfig tokens;
};

struct ModelDescription {
  std::string path;   // the file it was read from ("" when built in code)
  std::string model;  // model path, resolved against the file's folder
  std::vector<TensorDecl> inputs;
  std::vector<TensorDecl> labels;
  std::map<std::string, int64_t> dims;
  std::optional<LossSpec> loss;
  TrainableConfig trainable;
  std::optional<LoraConfig> lora;
  // embeddings: table initializer -> padding_idx (negative counts from the
  // end, as PyTorch's): lookups add no gradient to that row.
  std::map<std::string, int64_t> padding_rows;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  std::optional<int64_t> steps, epochs, batch_size, grad_accum, seed;
  DataConfig data;
  // precision: fp32 | bf16 | fp16. The low-precision type autocast computes
  // GEMMs in (graph/passes/autocast.h); kFloat for fp32.
  DType precision = DType::kFloat;
  LossScaleConfig loss_scale;  // read by fp16 runs only (bf16 and fp32 need no scaling)
  bool has_loss_scale = false;  // the description had a loss_scale: key
};

// "fp32", "bf16" or "fp16" as --precision and precision: spell them.
Result<DType> parse_precision(const std::string& s);

// Reads and checks a description file.
Result<ModelDescription> load_description(const std::string& path);
// Parses description text; relative paths resolve against `base_dir`.
Result<ModelDescription> parse_description(const std::string& text, const std::string& base_dir,
                                           const std::string& source_name = "<description>");

// dtype names as the description writes them (float32, int64, ...).
Result<DType> parse_dtype_name(const std::string& s);

}  // namespace ort_train
