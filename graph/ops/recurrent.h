// ONNX's recurrent layers, RNN, GRU and LSTM, read once from a node: the cell,
// directions, hidden size, layout, clip, activations (with their alpha/beta)
// and the cell's own switches. Shape rules, kernels and the gradient rule all
// read this.
//
// Training: the gradient rule turns the forward node into com.ort_train
// {RNN,GRU,LSTM}Training, the same op with a fourth output, `saved`, of shape
// [D, T, B, K] that keeps, for every step a direction took, what
// backpropagation through time reads (as ONNX Runtime's LSTMTraining keeps
// its gates): the gates' pre-activations before the clip (G*H), the hidden
// state the step made (H), and the cell's extra (H): LSTM's cell state, GRU's
// R_h h + Rb_h (linear_before_reset) or r * h (otherwise). Positions past a
// sequence's length are zeros.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "numerics/recurrent_cells.h"

namespace ort_train {

enum class RecurrentCell : int { kRnn, kGru, kLstm };

struct RecurrentSpec {
  RecurrentCell cell = RecurrentCell::kLstm;
  int64_t directions = 1;  // 2 when bidirectional
  bool reverse = false;    // the single direction runs backwards in time
  int64_t hidden = 0;
  int64_t layout = 0;      // 0: X [T, B, I], Y [T, D, B, H]; 1: X [B, T, I], Y [B, T, D, H]
  std::optional<float> clip;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM: f = 1 - i
  std::vector<RnnActivationFn> activations;  // per direction, gates() functions each: f [, g [, h]]

  int64_t gates() const { return cell == RecurrentCell::kRnn ? 1 : (cell == RecurrentCell::kGru ? 3 : 4); }
  int64_t functions() const { return cell == RecurrentCell::kRnn ? 1 : (cell == RecurrentCell::kGru ? 2 : 3); }
  // Width of one step's saved state (see above).
  int64_t saved_width() const { return (gates() + 2) * hidden; }
  const RnnActivationFn& fn(int64_t direction, int64_t k) const {
    return activations[static_cast<size_t>(direction * functions() + k)];
  }
  // Whether direction d walks time backwards.
  bool backwards(int64_t d) const { return directions == 2 ? d == 1 : reverse; }
  // Direction d's activations and switches, for numerics/recurrent_cells.h.
  CellFns cell_fns(int64_t d) const {
    CellFns c;
    c.f = fn(d, 0);
    if (functions() > 1) c.g = fn(d, 1);
    if (functions() > 2) c.h = fn(d, 2);
    c.clip = clip ? *clip : 0.f;
    c.input_forget = input_forget;
    c.linear_before_reset = linear_before_reset;
    return c;
  }
};

// `op_type` is the forward's ONNX name: "RNN", "GRU" or "LSTM" (the gradient
// op passes its forward's).
Result<RecurrentSpec> recurrent_spec(const Node& node, const std::string& op_type, int64_t opset);

// A node's sizes from its inputs' dims, each checked against the others:
// X, W, R and the optional B, sequence_lens, initial_h [, initial_c, P] in
// ONNX's order (nullopt for an absent or empty one). Sets spec.hidden from R.
// The CPU and CUDA kernels both read their inputs through it.
struct RecurrentSizes {
  int64_t steps = 0, batch = 0, in = 0, hidden = 0;
};
Result<RecurrentSizes> recurrent_sizes(const Node& node, RecurrentSpec& spec,
                                       const std::vector<std::optional<Dims>>& inputs);

// Each sequence's length: sequence_lens' values checked against the batch and
// T, or T for every sequence when it is absent.
Result<std::vector<int64_t>> sequence_lengths(const Node& node, const Tensor* lens, int64_t batch, int64_t steps);

// "LSTMTraining" -> "LSTM", "LSTMGrad" -> "LSTM"; ONNX names map to themselves.
std::string recurrent_forward_name(const std::string& op_type);

}  // namespace ort_train
