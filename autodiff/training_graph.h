// From a forward model and its description to the training graph: labels
// become graph inputs, the loss is appended (or the model's own is used), the
// trainable initializers are chosen, and the backward graph is built. The
// result is one ONNX-representable model whose outputs are the loss, the
// original outputs, and "<initializer>_grad" per trainable initializer.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "autodiff/gradient_builder.h"
#include "autodiff/loss.h"
#include "autodiff/trainable_set.h"
#include "configs/model_description.h"
#include "graph/passes/autocast.h"
#include "graph/passes/lora_adapters.h"
#include "graph/passes/pass_manager.h"

namespace ort_train {

struct TrainingGraph {
  Model model;                       // forward + loss + backward
  GradientGraph gradients;           // loss name, trainable list, gradient names, unreached
  LossSpec loss;                     // how the loss was made (the model's own, or an appended type)
  // The loss and the model's own outputs: what the forward (evaluation) part
  // computes. That part is the nodes these reach (graph/reachability.h).
  std::vector<std::string> eval_outputs;
  // What the graph passes changed: on the forward model before the loss is
  // appended, and on the whole training graph after the backward is built.
  PassReport passes_before_loss, passes_after_backward;
  // With the description's lora: the adapters added (first of all) and the
  // settings they were added with; their A and B are in `selection.trainable`.
  LoraPlan lora;
  PassReport passes_adapters;
  int64_t lora_base_parameters = 0;  // elements of the model's own parameters (what trains without lora:)
  AutocastReport autocast;           // --precision: the GEMMs made low-precision and the casts added
  // --precision fp16: the float32 scalar the backward starts from (the loss
  // scale), a graph input whose initializer default is 1; empty otherwise.
  std::string loss_scale_input;
  // What trains and why (autodiff/trainable_set.h); its `frozen` lists those
  // still in the graph after the passes.
  TrainableSet selection;
  // The exporter's folds undone before choosing (graph/dynamo_export.h), one line each.
  std::vector<std::string> unfolded;
  // BatchNormalization nodes of the file in inference mode (no training_mode,
  // or opset < 14): they normalize with the running statistics and leave them
  // as they are, which trains as the file says (a frozen-BN fine-tune) but not
  // as a model in PyTorch's train() mode. Startup warns with their names.
  std::vector<std::string> inference_batch_norms;
  double build_ms = 0;
};

// With lora:, what it added, for startup and `inspect`: a summary line (the
// adapters, their parameters and the trainable fraction, as PEFT's
// print_trainable_parameters counts it: what trains over the model's
// parameters plus the adapters'), then one line per adapter. Empty without lora:.
std::vector<std::string> describe_adapters(const TrainingGraph& tg);

// The BatchNormalization nodes of `model` that run in inference mode.
std::vector<std::string> inference_batch_norms(const Model& model);

// The warning for them: which nodes, and how to export training-mode BatchNorm.
std::string inference_batch_norm_warning(const std::vector<std::string>& nodes);

// The loss a description asks for, or the model's own when it has none: an
// output named "loss", else its only output if that is a float scalar.
Result<LossSpec> resolve_loss(const Model& model, const ModelDescription& desc);

// How many nodes the forward part (model + loss) has; the rest is backward.
size_t forward_node_count(const TrainingGraph& tg);

// The gradient outputs, which the trainer binds to the parameter store's
// buffers (estimate_memory's `bound`: they are not intermediates).
std::set<std::string> gradient_outputs(const TrainingGraph& tg);

// The fraction of gradient bytes that are final once the first
// `backward_fraction` of the backward nodes (in graph order) have run: how
// much a communicator could already be reducing at that point.
double gradient_bytes_final_by(const TrainingGraph& tg, double backward_fraction);

// Passes (graph/passes/) run on the forward model with the trainable set
// frozen, then the loss and backward are built, then the passes run again;
// `passes` picks and disables them (an empty list runs none).
Result<TrainingGraph> build_training_graph(Model forward, const ModelDescription& desc,
                                           const PassManagerOptions& passes = {});

}  // namespace ort_train
