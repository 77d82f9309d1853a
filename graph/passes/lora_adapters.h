// LoRA (Hu et al. 2021), as PEFT adds it: beside a frozen weight W of a
// MatMul, a Gemm or a 1x1 Conv, a low-rank path whose output is added to the
// op's:  Y = X W  ->  Y = X W + (alpha / rank) * dropout(X) A B,
// with A [in, rank] (PEFT's kaiming-uniform init) and B [rank, out] (zeros),
// so the adapted model starts as the base one. The pass lora_adapters
// (lora_adapters.cc) adds them in the adapter phase, before the trainable set
// is final; the trainer trains A and B only (plus the description's
// train_also), and training/lora_files.h writes them in PEFT's layout or
// merges them into W.
//
// Where W reaches its op (what "in" and "out" are for each):
//   - MatMul(X, W), W [in, out]: as a Linear's weight after the exporter (or
//     its optimizer) folded the transpose;
//   - MatMul(X, Transpose(W)), W [out, in]: nn.Linear under the dynamo exporter;
//   - Gemm(X, W, C), W [in, out], or [out, in] with transB (nn.Linear on 2-D
//     input); Gemm's alpha scales the adapter's path too;
//   - Conv(X, W) with W [out, in, 1, 1], one group: the adapter is two 1x1
//     convolutions, the first with the base's strides and pads (as PEFT's).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

struct LoraSettings {
  std::vector<std::string> targets;  // globs on the weight's initializer name, its PyTorch name or its module
  int64_t rank = 8;
  double alpha = 8;
  double dropout = 0;
  uint64_t seed = 0;  // A's init: from this and the weight's name
  // Initializers that hold a PyTorch parameter under another name (the
  // dynamo optimizer's folded Wᵀ "val_41" holds ...q_proj.weight): the name
  // PEFT knows the module by.
  std::map<std::string, std::string> parameter_names;
  double scale() const { return alpha / static_cast<double>(rank); }
};

// How the adapted initializer holds W (see above).
enum class LoraLayout {
  kInOut,    // [in, out]
  kOutIn,    // [out, in]
  kConv1x1,  // [out, in, 1, 1]
};

struct LoraAdapter {
  std::string weight;  // the frozen initializer
  // PEFT's module name: the PyTorch parameter name without ".weight", or,
  // for a TorchScript export's nameless "onnx::MatMul_12", the scope of the
  // node that reads it ("/bert/encoder/layer.0/attention/self/query/MatMul"
  // -> "bert.encoder.layer.0.attention.self.query").
  std::string module;
  std::string a, b;  // the adapter initializers: A [in, rank], B [rank, out], float32
  int64_t in = 0, out = 0;
  LoraLayout layout = LoraLayout::kInOut;
};

// The pass's input and what it added (PassContext::lora).
struct LoraPlan {
  LoraSettings settings;
  std::vector<LoraAdapter> adapters;  // in the graph's initializer order
};

// A's initial values: PEFT's kaiming_uniform_(a=sqrt(5)) on lora_A [rank, in],
// which is U(-1/sqrt(in), 1/sqrt(in)), drawn from `seed` and the module name
// (the same on every rank, every run with that seed and every export of the
// model), laid out [in, rank].
Tensor lora_a_init(int64_t in, int64_t rank, uint64_t seed, const std::string& module);

// scale * A B in the layout and dims of the adapted weight, float32.
Tensor lora_delta(const LoraAdapter& adapter, const Tensor& a, const Tensor& b, double scale);

}  // namespace ort_train
