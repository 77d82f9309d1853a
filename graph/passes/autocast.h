// autocast: --precision bf16 and fp16. The GEMMs of the forward graph
// (MatMul, Gemm, com.ort_train FusedMatMul) read their float32 operands
// through Casts to the 16-bit type and hand their product back through a Cast
// to float32, as PyTorch's autocast does for the ops on its lower-precision
// list; everything else (softmax, normalization, reductions, losses,
// exp/log, the elementwise ops) stays float32. Run on the forward graph
// before the backward is built, so the gradient GEMMs are 16-bit too (each
// Cast's gradient is a Cast the other way) and gradients reach the float32
// master weights in float32.
//
// Choices, where autocast leaves room:
// - A FusedMatMul's bias and Gemm's C are cast to the 16-bit type and added
//   inside the GEMM before its one rounding, as PyTorch's addmm does; so the
//   bias's gradient is a 16-bit sum, which overflows float16 exactly where
//   PyTorch's does (what decides fp16's skipped steps). A Gemm with beta
//   other than 1 stays float32 (its C gradient would need a 16-bit Mul).
// - Every GEMM gets casts of its own, so a value that feeds several GEMMs
//   (x into Q, K and V) has its gradients summed in float32, not 16 bits.
// - Only float32 operands are cast: a model already in float64 or a 16-bit
//   type is left as it is.
// - Attention (com.ort_train Attention, attention_fusion's) and Conv stay
//   float32 for now: they have no 16-bit kernel yet.
// - Each GEMM's product is cast back to float32 at once. The half_activations
//   pass (off by default) keeps it in 16 bits through the ops after it that
//   PyTorch's autocast leaves in the input's type (GELU, Dropout, views).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

struct AutocastReport {
  DType low = DType::kFloat;
  int64_t nodes = 0;  // GEMMs that now compute in the low precision
  int64_t casts = 0;  // Cast nodes inserted
  int64_t half_activations = 0;  // ops after the GEMMs the half_activations pass kept in 16 bits
  std::vector<std::string> gemms;  // "MatMul at <node>" for each GEMM cast
};

// Rewrites the model's graph in place (the "autocast" pass runs it through
// the pass manager, with PassContext::precision); `low` is DType::kBFloat16 or
// DType::kFloat16 (whose training also scales the loss: training/loss_scaler.h).
Result<AutocastReport> autocast(Model& model, DType low);

// Every value's element type: the graph's value infos, completed by shape
// inference on a copy where a node's output has none (a model from a file has
// them only where its exporter wrote them). Shared with half_activations.
Result<std::unordered_map<std::string, DType>> value_dtypes(const Model& model);

}  // namespace ort_train
