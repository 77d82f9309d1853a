// What the CPU kernels of RNN, GRU and LSTM (recurrent.cc) and of their
// gradients (recurrent_grad.cc) share: one node's spec, sizes and inputs, and
// the indexing of X, Y, the states and `saved` (graph/ops/recurrent.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
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
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3) return shape_error("{}: X must be 3-D", ctx.node().describe());
  k.steps = x.dims()[k.s.layout == 0 ? 0 : 1];
  k.batch = x.dims()[k.s.layout == 0 ? 1 : 0];
  k.in = x.dims()[2];
  k.G = k.s.gates();
  k.D = k.s.directions;
  const Tensor& r = ctx.input(2);
  if (r.rank() != 3 || r.dims()[0] != k.D || r.dims()[1] % k.G != 0)
    return shape_error("{}: R must be [{}, {}*H, H]", ctx.node().describe(), k.D, k.G);
  k.H = r.dims()[2];
  if (k.s.hidden > 0 && k.s.hidden != k.H)
    return shape_error("{}: hidden_size {} but R is for {}", ctx.node().describe(), k.s.hidden, k.H);
  k.s.hidden = k.H;
  k.K = k.s.saved_width();
  const Tensor& w = ctx.input(1);
  if (w.dims() != Dims{k.D, k.G * k.H, k.in} || r.dims() != Dims{k.D, k.G * k.H, k.H})
    return shape_error("{}: W {} and R {} do not fit X {} and {} hidden units", ctx.node().describe(),
                       dims_to_string(w.dims()), dims_to_string(r.dims()), dims_to_string(x.dims()), k.H);
  k.x = x.data<T>();
  k.w = w.data<T>();
  k.r = r.data<T>();
  auto optional = [&](size_t i, Dims want, const T*& dst) -> Status {
    if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return Status::Ok();
    if (ctx.input(i).dims() != want)
      return shape_error("{}: input {} is {}, not {}", ctx.node().describe(), i, dims_to_string(ctx.input(i).dims()),
                         dims_to_string(want));
    dst = ctx.input(i).data<T>();
    return Status::Ok();
  };
  Dims state = k.s.layout == 0 ? Dims{k.D, k.batch, k.H} : Dims{k.batch, k.D, k.H};
  RETURN_IF_ERROR(optional(3, {k.D, 2 * k.G * k.H}, k.bias));
  RETURN_IF_ERROR(optional(5, state, k.h0));
  if (k.lstm()) {
    RETURN_IF_ERROR(optional(6, state, k.c0));
    RETURN_IF_ERROR(optional(7, {k.D, 3 * k.H}, k.p));
  }
  k.lens.assign(static_cast<size_t>(k.batch), k.steps);
  if (ctx.has_input(4) && ctx.input(4).numel() > 0) {
    k.lens = ctx.input(4).to_int64_vector();
    if (static_cast<int64_t>(k.lens.size()) != k.batch)
      return shape_error("{}: sequence_lens has {} entries for a batch of {}", ctx.node().describe(), k.lens.size(),
                         k.batch);
    for (int64_t l : k.lens)
      if (l < 0 || l > k.steps)
        return invalid_argument("{}: sequence length {} outside [0, {}]", ctx.node().describe(), l, k.steps);
  }
  return k;
}

inline size_t saved_index(const RecurrentSpec& s) { return s.cell == RecurrentCell::kLstm ? 3 : 2; }

}  // namespace ort_train::recurrent_cpu
