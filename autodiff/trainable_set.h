// Which initializers train. An ONNX file has no "parameter" flag: a weight, a
// running statistic, a causal mask and a constant the exporter folded are all
// initializers. The default set holds what can be a parameter, decided from
// evidence in the file:
//   - the values: inf, NaN or a magnitude of 1e30 or more (finfo.min) is a
//     mask, never a parameter;
//   - the dynamo exporter's graph signature (graph metadata
//     pkg.torch.export.ExportedProgram.graph_signature, and each
//     initializer's pkg.torch.export.graph_signature.InputSpec.kind): a
//     PARAMETER trains, a BUFFER or CONSTANT_TENSOR does not;
//   - its optimizer's record of what a folded initializer came from
//     (pkg.onnxscript.optimizer.folded_from): buffers and constants alone
//     make a constant (rotary tables, masks, GELU's scalars); one parameter
//     consumed whole (Wᵀ of a Linear) trains in its place, which trains
//     equivalently; a fold that also reads a parameter still in the file is
//     undone when the values show it is that parameter's transpose or copy
//     (a tied output embedding); anything else mixing a parameter with other
//     values (a gather or expand of it) is refused, as is a parameter the
//     optimizer merged into another equal-valued initializer (zero biases,
//     LayerNorm weights of ones): PyTorch trains those apart.
// A file without the exporter's metadata (TorchScript exports, other
// producers) trains every floating-point initializer that is not a mask.
// The description's trainable.include / trainable.exclude globs settle any
// of these (exclude wins). With lora:, only what lora.train_also names may
// train (beside the adapters): every other parameter is frozen.
#pragma once
#include <string>
#include <vector>

#include "configs/model_description.h"
#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

// One floating-point initializer and why it does or does not train.
struct InitializerChoice {
  std::string name;
  bool trains = false;
  std::string reason;  // a few words: "a buffer in the graph signature", "holds -inf (a mask)"
  std::string source;  // a folded parameter's name in PyTorch ("" otherwise)
};

struct TrainableSet {
  std::vector<std::string> trainable;  // file order
  std::vector<std::string> frozen;     // floating-point initializers that do not train
  // Every decision other than "a parameter trains" and every one the
  // description made: what startup and `inspect` print.
  std::vector<InitializerChoice> notable;
  std::vector<std::string> unused_globs;  // include/exclude globs that matched nothing
  bool graph_signature = false;           // the file carries the dynamo exporter's metadata
};

// The reason lora: gives for a parameter it freezes (InitializerChoice::reason).
inline constexpr const char* kFrozenByLora = "lora: freezes it (not in lora.train_also)";

// Undoes the exporter's folds that the values prove are a transpose or a
// copy of a parameter still in the file (a tied output embedding): the
// folded initializer becomes a Transpose or Identity node of the parameter,
// so the two train as one tensor, as in PyTorch. Returns what it undid,
// one line each.
std::vector<std::string> unfold_parameter_copies(Model& model);

// The trainable set of `model` under the description's globs; an error
// naming every initializer the file cannot decide, and the key that settles it.
Result<TrainableSet> choose_trainable(const Model& model, const TrainableConfig& config);

// Startup and `inspect` lines: each reason once, with the initializers it applies to.
std::vector<std::string> describe_choices(const TrainableSet& set, size_t max_names = 8);

}  // namespace ort_train
