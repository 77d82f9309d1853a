// What passes, the memory planner and the executor must know about a node
// beyond its shape rule, read from the traits its op declared where it
// registers (OpTrait in graph/op_schema.h): no list of op names anywhere.
// Folding runs a node once at compile time with default run options, and
// merging assumes two equal nodes compute equal tensors; both are wrong for
// random ops, and folding for ops that read the run.
#pragma once
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

// Draws random numbers (Dropout, DropoutAdd): each node has its own stream
// (seeded by its position and the step), so two such nodes differ and one
// node differs from run to run.
bool is_random_op(const Node& node);

// Part of the training step rather than of the function it trains: ONNX's
// optimizer and Gradient ops (ai.onnx.preview.training), and
// BatchNormalization in training mode, whose statistics the trainer writes back.
bool is_training_step_op(const Node& node);

// The outputs that are the next values of inputs ({output, input} index
// pairs: BatchNormalization's running statistics), as the op declared them.
std::vector<std::pair<size_t, size_t>> state_outputs(const Node& node);

// Behaves according to the run (RunOptions: training flag, seed, step), which
// a compile-time evaluation cannot know: Dropout, DropoutAdd, DropoutGrad,
// Attention and AttentionGrad (their attention dropout).
bool reads_run_options(const Node& node);

// Output 0 is input 0's buffer with other dims (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity): the memory planner counts no bytes for it.
bool is_view_op(const Node& node);

// Carries a subgraph (If, Loop, Scan): no kernel runs it and comparing bodies is not worth it.
bool has_subgraph(const Node& node);

// May be replaced by its value when its inputs are constants.
bool is_foldable_op(const Node& node);
// May be merged with an equal node reading the same inputs.
bool is_mergeable_op(const Node& node);

}  // namespace ort_train
