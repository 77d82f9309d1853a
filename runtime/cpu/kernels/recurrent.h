// What the CPU kernels of RNN, GRU and LSTM (recurrent.cc) and of their
// gradients (recurrent_grad.cc) share: one node's spec, sizes and inputs, and
// the indexing of X, Y, the states and `saved` (graph/ops/recurrent.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "graph/ops/recurrent.h"
#include "runtime/kernel.h"

namespace ort_train::recurrent_cpu {

// Everything one node's kernels read: the spec, the sizes and the inputs.
template <typename T>
struct Recurrent {
  RecurrentSpec s;
  int64_t steps = 0, batch = 0, in = 0, H = 0, G = 0, D = 0, K = 0;
  const T *x = nullptr, *w = nullptr, *r = nullptr, *bias = nullptr, *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  std::vector<int64_t> lens;

  bool lstm() const { return s.cell == RecurrentCell::kLstm; }
  bool gru() const { return s.cell == RecurrentCell::kGru; }
  int64_t x_at(int64_t t, int64_t b) const { return (s.layout == 0 ? t * batch + b : b * steps + t) * in; }
  int64_t y_at(int64_t t, int64_t d, int64_t b) const {
    return (s.layout == 0 ? (t * D + d) * batch + b : (b * steps + t) * D + d) * H;
  }
  int64_t state_at(int64_t d, int64_t b) const { return (s.layout == 0 ? d * batch + b : b * D + d) * H; }
  int64_t saved_at(int64_t d, int64_t t, int64_t b) const { return ((d * steps + t) * batch + b) * K; }
  // The time position direction d's step `k` reads for sequence b (-1: past its length).
  int64_t time_of(int64_t d, int64_t k, int64_t b) const {
    int64_t len = lens[static_cast<size_t>(b)];
    if (k >= len) return -1;
    return s.backwards(d) ? len - 1 - k : k;
  }
  // Rows [t * B + b] of X for every step (layout 1 transposed), and the
  // projection X W^T + Wb (+ Rb where it adds to the pre-activation).
  std::vector<T> inputs_by_time() const {
    std::vector<T> out(static_cast<size_t>(steps * batch * in));
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t b = 0; b < batch; ++b) std::memcpy(&out[(t * batch + b) * in], x + x_at(t, b), in * sizeof(T));
    return out;
  }
  const T* W(int64_t d) const { return w + d * G * H * in; }
  const T* R(int64_t d) const { return r + d * G * H * H; }
  // Rb_h of GRU with linear_before_reset stays inside r * (...): not in the projection.
  bool rb_in_projection(int64_t gate) const { return !(gru() && s.linear_before_reset && gate == 2); }
};

template <typename T>
Result<Recurrent<T>> read_inputs(const KernelContext& ctx) {
  Recurrent<T> k;
  ASSIGN_OR_RETURN(k.s, recurrent_spec(ctx.node(), recurrent_forward_name(ctx.node().op_type), ctx.opset()));
  std::vector<std::optional<Dims>> dims;
  for (size_t i = 0; i < (k.s.cell == RecurrentCell::kLstm ? 8u : 6u); ++i)
    dims.push_back(ctx.has_input(i) && (i < 3 || ctx.input(i).numel() > 0) ? std::optional<Dims>(ctx.input(i).dims())
                                                                  : std::nullopt);
  ASSIGN_OR_RETURN(RecurrentSizes z, recurrent_sizes(ctx.node(), k.s, dims));
  k.steps = z.steps, k.batch = z.batch, k.in = z.in, k.H = z.hidden;
  k.G = k.s.gates();
  k.D = k.s.directions;
  k.K = k.s.saved_width();
  auto data = [&](size_t i) -> const T* { return dims[i] ? ctx.input(i).data<T>() : nullptr; };
  k.x = data(0), k.w = data(1), k.r = data(2), k.bias = data(3), k.h0 = data(5);
  if (k.lstm()) k.c0 = data(6), k.p = data(7);
  ASSIGN_OR_RETURN(k.lens, sequence_lengths(ctx.node(), dims[4] ? &ctx.input(4) : nullptr, k.batch, k.steps));
  return k;
}

// Output i filled with zeros (positions past a sequence's length stay so), or
// null when the node does not ask for it.
template <typename T>
T* zeroed_output(KernelContext& ctx, size_t i) {
  if (i >= ctx.num_outputs() || !ctx.has_output(i)) return nullptr;
  Tensor& t = ctx.output(i);
  std::fill(t.data<T>(), t.data<T>() + t.numel(), T(0));
  return t.data<T>();
}

inline size_t saved_index(const RecurrentSpec& s) { return s.cell == RecurrentCell::kLstm ? 3 : 2; }

}  // namespace ort_train::recurrent_cpu
