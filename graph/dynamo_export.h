// What torch.onnx.export's dynamo exporter (torch >= 2.9, the default) writes
// about PyTorch's view of the model, and undoing the folds of its optimizer
// (optimize=True, the default) where the file proves what they were.
//   - The graph's metadata pkg.torch.export.ExportedProgram.graph_signature
//     lists every lifted input: "p_ln_weight: PARAMETER target='ln.weight'",
//     BUFFER, CONSTANT_TENSOR, USER_INPUT.
//   - Each initializer's value metadata: its InputSpec.kind, or, for one the
//     optimizer folded, pkg.onnxscript.optimizer.folded_from: the values it
//     was computed from.
//   - Each node's pkg.torch.onnx.fx_node: the FX node it came from, whose
//     arguments name the placeholders (%p_ln_weight) it read in PyTorch.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

struct TorchSignature {
  struct Entry {
    std::string placeholder;  // the FX name: p_ln_weight
    std::string kind;         // PARAMETER, BUFFER, CONSTANT_TENSOR, ...
    std::string target;       // the state_dict name: ln.weight
  };
  std::vector<Entry> inputs;  // lifted state only (USER_INPUTs left out), in file order

  const Entry* by_target(const std::string& target) const;
  const Entry* by_placeholder(const std::string& placeholder) const;
};

// The graph signature, when the file has one.
std::optional<TorchSignature> torch_signature(const Graph& g);

// The graph-signature kind the file records on an initializer's value ("" when none).
std::string initializer_kind(const Graph& g, const std::string& name);

// What the exporter's optimizer folded an initializer from; empty when it was not folded.
std::vector<std::string> folded_from(const Graph& g, const std::string& name);

// The placeholders (%p_ln_weight, %b_mask) a node's FX node read, in argument order.
std::vector<std::string> fx_placeholders(const Node& n);

// Undoes the optimizer's folds that the file proves, so the parameters train
// as PyTorch trains them:
//   - a parameter merged into another initializer of equal value (zero
//     biases, LayerNorm weights of ones): each node that read it in PyTorch
//     (its fx_node) reads a copy of its own again;
//   - a zero bias removed from a Gemm whose FX node (aten.linear, aten.addmm)
//     added it: zeros under its own name again, as the Gemm's C;
//   - a fold of one parameter still in the file whose values are that
//     parameter transposed or copied (a tied output embedding): a Transpose
//     or Identity node of the parameter again.
// Returns one line per thing undone. A file without a graph signature is left as it is.
std::vector<std::string> undo_exporter_folds(Model& model);

}  // namespace ort_train
