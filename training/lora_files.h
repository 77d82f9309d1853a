// LoRA adapters in and out (graph/passes/lora_adapters.h adds them):
//   - --export-adapters: safetensors in PEFT's layout, which
//     PeftModel.from_pretrained loads onto the exported module:
//       base_model.model.<module>.lora_A.weight  [rank, in]   (Aᵀ; a 1x1 Conv's: [rank, in, 1, 1])
//       base_model.model.<module>.lora_B.weight  [out, rank]  (Bᵀ; [out, rank, 1, 1])
//       base_model.model.<parameter>             each lora.train_also tensor, as PEFT saves biases
//     with adapter_config.json (PEFT's LoraConfig) beside it;
//   - --adapters: the same layout read back into A, B (and train_also where
//     the file has them), every key and shape checked before a value is taken;
//   - --export with lora: the merged model, W + (alpha / rank) A B in W's
//     layout, with no adapter left in it.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/passes/lora_adapters.h"
#include "graph/status.h"

namespace ort_train {

// What a LoRA run trains, by initializer name, as the files name it.
struct LoraTensors {
  const LoraPlan* plan = nullptr;
  std::vector<std::string> train_also;  // base initializers that train too (lora.train_also)
  std::map<std::string, Tensor> values;  // A, B and train_also tensors (host; the trained ones after a run)
};

// The PEFT key of an adapter's A (`a`) or B.
std::string peft_key(const LoraAdapter& adapter, bool a);

// Writes `path` (safetensors) and adapter_config.json in its folder.
Status write_peft_adapters(const std::string& path, const LoraTensors& lora);

// Reads `path` into `lora.values`' tensors, in place (their storage is the
// graph's). Every adapter's two keys must be there; train_also keys may be;
// any other key, a wrong shape or a dtype that is not F32, F16, BF16 or F64
// is an error naming the key. Nothing is changed unless all of it is right.
Status read_peft_adapters(const std::string& path, LoraTensors& lora);

// `forward` (the model as its file holds it) with every adapted weight
// turned into W + scale A B, in W's own storage: the export's copy of the
// model is merged in place, so the merge needs no second copy of the weights
// (one delta at a time).
Status merge_adapters(Model& forward, const LoraTensors& lora);

}  // namespace ort_train
