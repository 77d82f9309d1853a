// The graphs a training run executes, made in one place: the step's and
// evaluation's. Training, `inspect`, recompute's memory plans, the memory
// estimate and --save-training-graph all take the step's from here, so the
// graph saved is the graph executed.
//
// From the training graph (after its passes and autocast), in order:
//   1. state outputs (the state_outputs pass, graph/passes/state_outputs.h):
//      each output an op declares as the next value of an initializer input
//      (BatchNormalization's running statistics) becomes a graph output,
//      which the trainer stores back after every micro-batch;
//   2. hoisted weight copies (the weight_cast_hoisting pass,
//      graph/passes/weight_cast_hoisting.h): a Cast of a float32 trainable
//      weight to 16 bits becomes an initializer of its own, refreshed once per
//      step after the update instead of cast in every forward;
//   3. the step's outputs: the loss, the gradients and the state outputs,
//      and only the nodes they need (a model output nothing in the step
//      reads, such as the logits a Hugging Face export returns beside its
//      loss, is not computed; evaluation keeps it).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "autodiff/training_graph.h"
#include "graph/passes/weight_cast_hoisting.h"

namespace ort_train {

struct StepGraph {
  Model model;
  // graph output -> the initializer it is the next value of
  std::vector<std::pair<std::string, std::string>> state_writebacks;
  std::vector<HoistedCopy> hoisted;
};

// The step graph of `tg` (a model that keeps tg.model's value names:
// recompute's rewrites pass their own). A hoisted copy is the rounding of its
// weight when the weight is a host tensor; otherwise zeros, for the caller to
// fill (the trainer refreshes every copy from its master before the first step).
Result<StepGraph> build_step_graph(const TrainingGraph& tg);
Result<StepGraph> build_step_graph(const TrainingGraph& tg, const Model& model);

// Whether the loss classifies (softmax cross-entropy, NLL): evaluation then
// also reads its scores, for the accuracy.
bool is_classification(const LossSpec& loss);

// The graph evaluation runs (Trainer::evaluate, --eval-data): the nodes the
// loss needs, and a classification loss's scores, with those as outputs; no
// backward, and the training graph's Casts in place of hoisted copies.
Result<Model> build_eval_graph(const TrainingGraph& tg);

}  // namespace ort_train
