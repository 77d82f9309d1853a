// CPU kernels of com.ort_train {RNN,GRU,LSTM}Grad: backpropagation through time
// over the forward's `saved` state (graph/ops/recurrent.h).
//   inputs:  the forward's inputs (X, W, R, B, sequence_lens, initial_h
//            [, initial_c, P]), saved, dY, dY_h [, dY_c] (any may be empty)
//   outputs: dX, dW, dR, dB, (none for sequence_lens), d initial_h
//            [, d initial_c, dP]
// Per direction the steps run in reverse: each step turns dh (and LSTM's dc)
// into the gates' pre-activation gradients, row by row, then one GEMM with R
// carries dh to the step before. dX, dW, dR and the biases come at the end as
// GEMMs and column sums over every step's gate gradients.
#include "graph/dispatch.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/kernels/recurrent.h"

namespace ort_train {
namespace {

using namespace recurrent_cpu;

template <typename T>
struct Grads {
  const T *saved = nullptr, *dy = nullptr, *dy_h = nullptr, *dy_c = nullptr;
  T *dx = nullptr, *dw = nullptr, *dr = nullptr, *db = nullptr, *dh0 = nullptr, *dc0 = nullptr, *dp = nullptr;
};

// Gate gradients of one direction: dxg (d pre-activation, the input
// projection's and the biases' gradient), drg (d of the recurrent product's
// input side: equal to dxg except GRU's n gate), and what the recurrent GEMMs read.
template <typename T>
struct StepGrads {
  std::vector<T> dxg, drg, h_prev, rh_prev;
};

// dX, dW, dR and the biases from every step's gate gradients (GEMMs and
// column sums), and the initial states' gradients from what the first step left.
template <typename T>
void sum_over_steps(const Recurrent<T>& k, int64_t d, const std::vector<T>& xs, const StepGrads<T>& sg,
                    const std::vector<T>& dh, const std::vector<T>& dc, Grads<T>& g) {
  const int64_t B = k.batch, H = k.H, GH = k.G * H, TB = k.steps * B;
  if (g.dx && TB > 0) {
    std::vector<T> dxs(static_cast<size_t>(TB * k.in));
    gemm(false, false, TB, k.in, GH, T(1), sg.dxg.data(), GH, k.W(d), k.in, T(0), dxs.data(), k.in);
    for (int64_t t = 0; t < k.steps; ++t)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < k.in; ++i) g.dx[k.x_at(t, b) + i] += dxs[(t * B + b) * k.in + i];
  }
  if (g.dw && TB > 0) gemm(true, false, GH, k.in, TB, T(1), sg.dxg.data(), GH, xs.data(), k.in, T(0), g.dw + d * GH * k.in, k.in);
  if (g.dr && TB > 0) {
    T* dr = g.dr + d * GH * H;
    gemm(true, false, GH, H, TB, T(1), sg.drg.data(), GH, sg.h_prev.data(), H, T(0), dr, H);
    if (!sg.rh_prev.empty())  // GRU's R_h multiplied r * h, not h
      gemm(true, false, H, H, TB, T(1), sg.drg.data() + 2 * H, GH, sg.rh_prev.data(), H, T(0), dr + 2 * H * H, H);
  }
  if (g.db) {
    T* wb = g.db + d * 2 * GH;
    for (int64_t row = 0; row < TB; ++row)
      for (int64_t j = 0; j < GH; ++j) {
        wb[j] += sg.dxg[row * GH + j];
        wb[GH + j] += sg.drg[row * GH + j];
      }
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      if (g.dh0) g.dh0[k.state_at(d, b) + j] = dh[b * H + j];
      if (g.dc0) g.dc0[k.state_at(d, b) + j] = dc[b * H + j];
    }
}

template <typename T>
void backward_direction(const Recurrent<T>& k, int64_t d, const std::vector<T>& xs, Grads<T>& g) {
  const int64_t B = k.batch, H = k.H, G = k.G, GH = G * H, TB = k.steps * B;
  StepGrads<T> sg;
  sg.dxg.assign(static_cast<size_t>(TB * GH), T(0));
  sg.drg.assign(sg.dxg.size(), T(0));
  sg.h_prev.assign(static_cast<size_t>(TB * H), T(0));
  if (k.gru() && !k.s.linear_before_reset) sg.rh_prev.assign(sg.h_prev.size(), T(0));
  std::vector<T> dh(static_cast<size_t>(B * H), T(0)), dc(dh.size(), T(0)), step_d(static_cast<size_t>(B * GH));
  std::vector<T> carry(dh.size()), d_rh(dh.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      if (g.dy_h) dh[b * H + j] = g.dy_h[k.state_at(d, b) + j];
      if (g.dy_c) dc[b * H + j] = g.dy_c[k.state_at(d, b) + j];
    }
  const T* peep = k.p ? k.p + d * 3 * H : nullptr;
  T* dpeep = g.dp ? g.dp + d * 3 * H : nullptr;
  // The state a step started from: the step before it, or the initial state.
  auto previous = [&](int64_t step, int64_t b, int64_t offset, const T* initial, int64_t j) -> T {
    if (step == 0) return initial ? initial[k.state_at(d, b) + j] : T(0);
    return g.saved[k.saved_at(d, k.time_of(d, step - 1, b), b) + offset + j];
  };
  const CellFns fns = k.s.cell_fns(d);
  for (int64_t step = k.steps - 1; step >= 0; --step) {
    std::fill(step_d.begin(), step_d.end(), T(0));
    auto dh_of = [&](int64_t t, int64_t b, int64_t j) {
      return dh[b * H + j] + (g.dy ? g.dy[k.y_at(t, d, b) + j] : T(0));
    };
    // GRU without linear_before_reset: dA_n first, then (r h)'s gradient through R_h.
    if (k.gru() && !k.s.linear_before_reset) {
      std::vector<T> dan(static_cast<size_t>(B * H), T(0));
      for (int64_t b = 0; b < B; ++b) {
        int64_t t = k.time_of(d, step, b);
        if (t < 0) continue;
        const T* sv = g.saved + k.saved_at(d, t, b);
        for (int64_t j = 0; j < H; ++j) {
          const T a[3] = {sv[j], sv[H + j], sv[2 * H + j]};
          dan[b * H + j] = gru_dn(fns, a, dh_of(t, b, j));
        }
      }
      if (B > 0 && H > 0) gemm(false, false, B, H, H, T(1), dan.data(), H, k.R(d) + 2 * H * H, H, T(0), d_rh.data(), H);
    }
    for (int64_t b = 0; b < B; ++b) {
      const int64_t t = k.time_of(d, step, b);
      if (t < 0) continue;
      const T* sv = g.saved + k.saved_at(d, t, b);
      T* dxg = &sg.dxg[(t * B + b) * GH];
      T* drg = &sg.drg[(t * B + b) * GH];
      T* hp = &sg.h_prev[(t * B + b) * H];
      for (int64_t j = 0; j < H; ++j) {
        const T dht = dh_of(t, b, j);
        const T h_prev = previous(step, b, G * H, k.h0, j);
        hp[j] = h_prev;
        const T a[4] = {sv[j], G > 1 ? sv[H + j] : T(0), G > 2 ? sv[2 * H + j] : T(0), G > 3 ? sv[3 * H + j] : T(0)};
        const T extra = sv[(G + 1) * H + j];
        CellGrad<T> cg;
        if (k.lstm()) {
          const T c_prev = previous(step, b, (G + 1) * H, k.c0, j);
          cg = lstm_step_grad(fns, a, extra, c_prev, dht, dc[b * H + j], peep ? peep[j] : T(0),
                              peep ? peep[H + j] : T(0), peep ? peep[2 * H + j] : T(0));
          dc[b * H + j] = cg.dc_prev;
          if (dpeep)
            for (int64_t q = 0; q < 3; ++q) dpeep[q * H + j] += cg.dp[q];
        } else if (k.gru()) {
          cg = gru_step_grad(fns, a, extra, h_prev, dht, k.s.linear_before_reset ? T(0) : d_rh[b * H + j]);
          if (!k.s.linear_before_reset) sg.rh_prev[(t * B + b) * H + j] = cell_act(fns, fns.f, a[1]) * h_prev;
        } else {
          cg = rnn_step_grad(fns, a[0], dht);
        }
        for (int64_t q = 0; q < G; ++q) {
          dxg[q * H + j] = cg.dx[q];
          drg[q * H + j] = cg.dr[q];
        }
        carry[b * H + j] = cg.direct;
      }
      std::memcpy(&step_d[b * GH], drg, GH * sizeof(T));
      if (k.gru() && !k.s.linear_before_reset)
        std::fill(step_d.begin() + b * GH + 2 * H, step_d.begin() + (b + 1) * GH, T(0));  // went through d_rh
    }
    // dh_prev = direct + step_d R for the rows this step ran; the others keep their dh.
    std::vector<T> through_r(static_cast<size_t>(B * H), T(0));
    if (B > 0 && H > 0) gemm(false, false, B, H, GH, T(1), step_d.data(), GH, k.R(d), H, T(0), through_r.data(), H);
    for (int64_t b = 0; b < B; ++b) {
      if (k.time_of(d, step, b) < 0) continue;
      for (int64_t j = 0; j < H; ++j) dh[b * H + j] = carry[b * H + j] + through_r[b * H + j];
    }
  }
  sum_over_steps(k, d, xs, sg, dh, dc, g);
}

Status recurrent_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Status st;
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    auto k = read_inputs<T>(ctx);
    if (!k.ok()) {
      st = k.status();
      return;
    }
    const size_t n = k->lstm() ? 8 : 6;
    Grads<T> g;
    auto in = [&](size_t i) -> const T* {
      return ctx.has_input(i) && ctx.input(i).numel() > 0 ? ctx.input(i).template data<T>() : nullptr;
    };
    g.saved = in(n);
    if (!g.saved || ctx.input(n).numel() != k->D * k->steps * k->batch * k->K) {
      st = shape_error("{}: the saved state does not fit the inputs", ctx.node().describe());
      return;
    }
    g.dy = in(n + 1);
    g.dy_h = in(n + 2);
    if (k->lstm()) g.dy_c = in(n + 3);
    auto out = [&](size_t i) { return zeroed_output<T>(ctx, i); };
    g.dx = out(0), g.dw = out(1), g.dr = out(2), g.db = out(3), g.dh0 = out(5);
    if (k->lstm()) g.dc0 = out(6), g.dp = out(7);
    std::vector<T> xs = k->inputs_by_time();
    for (int64_t d = 0; d < k->D; ++d) backward_direction(*k, d, xs, g);
  });
  if (!ok) return unsupported_dtype(ctx, x.dtype());
  return st;
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "RNNGrad", 1, 1000, DeviceKind::kCpu, recurrent_grad);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "GRUGrad", 1, 1000, DeviceKind::kCpu, recurrent_grad);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "LSTMGrad", 1, 1000, DeviceKind::kCpu, recurrent_grad);

}  // namespace ort_train
