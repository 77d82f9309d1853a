// What passes must know about an op beyond its shape rule: whether its
// outputs are a pure function of its input values and attributes. Folding
// runs a node once at compile time with default run options, and merging
// assumes two equal nodes compute equal tensors; both are wrong for these.
#pragma once
#include "graph/graph.h"

namespace ort_train {

// Draws random numbers (Dropout, RandomNormal/Uniform(Like), Multinomial,
// Bernoulli): each node has its own stream (seeded by its position and the
// step), so two such nodes differ and one node differs from run to run.
bool is_random_op(const Node& node);

// Part of the training step rather than of the function it trains: ONNX's
// optimizer and Gradient ops (ai.onnx.preview.training), and
// BatchNormalization in training mode, whose statistics the trainer writes back.
bool is_training_step_op(const Node& node);

// Behaves according to the run (RunOptions: training flag, step), which a
// compile-time evaluation cannot know: Dropout and DropoutGrad.
bool reads_run_options(const Node& node);

// Carries a subgraph (If, Loop, Scan): no kernel runs it and comparing bodies is not worth it.
bool has_subgraph(const Node& node);

// May be replaced by its value when its inputs are constants.
bool is_foldable_op(const Node& node);
// May be merged with an equal node reading the same inputs.
bool is_mergeable_op(const Node& node);

}  // namespace ort_train
