// CPU kernels of RNN, GRU and LSTM (and their com.ort_train training forms,
// which also write `saved`, graph/ops/recurrent.h); their gradients are in
// recurrent_grad.cc, the cells' arithmetic in numerics/recurrent_cells.h. Per direction: one
// GEMM projects every time step's input, then each step makes one GEMM of the
// hidden state with R and the cell's elementwise arithmetic; the backward
// mirrors it and forms dX, dW, dR and the biases' gradients as GEMMs over all
// steps at the end. Sequences shorter than T (sequence_lens) stop early: their
// outputs past the length are zeros and their state is the one of their last
// step; a reverse direction starts at each sequence's own last step.
#include "runtime/cpu/kernels/recurrent.h"

#include "graph/dispatch.h"
#include "runtime/cpu/blas.h"

namespace ort_train {
namespace {

using namespace recurrent_cpu;

// --- forward ----------------------------------------------------------------

template <typename T>
struct Outputs {
  T *y = nullptr, *y_h = nullptr, *y_c = nullptr, *saved = nullptr;
};

// Direction d over every step: the cell's arithmetic per active row.
template <typename T>
void forward_direction(const Recurrent<T>& k, int64_t d, const std::vector<T>& xs, Outputs<T>& o) {
  const int64_t B = k.batch, H = k.H, GH = k.G * H;
  std::vector<T> proj(static_cast<size_t>(k.steps * B * GH), T(0));
  if (k.steps * B > 0 && k.in > 0) gemm(false, true, k.steps * B, GH, k.in, T(1), xs.data(), k.in, k.W(d), k.in, T(0), proj.data(), GH);
  if (k.bias) {
    const T* wb = k.bias + d * 2 * GH;
    const T* rb = wb + GH;
    for (int64_t row = 0; row < k.steps * B; ++row)
      for (int64_t j = 0; j < GH; ++j) proj[row * GH + j] += wb[j] + (k.rb_in_projection(j / H) ? rb[j] : T(0));
  }
  std::vector<T> h(static_cast<size_t>(B * H), T(0)), c(h.size(), T(0)), rec(static_cast<size_t>(B * GH));
  std::vector<T> rh(static_cast<size_t>(B * H)), nrec(static_cast<size_t>(B * H));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      if (k.h0) h[b * H + j] = k.h0[k.state_at(d, b) + j];
      if (k.c0) c[b * H + j] = k.c0[k.state_at(d, b) + j];
    }
  const T* rb_n = k.bias && k.gru() && k.s.linear_before_reset ? k.bias + d * 2 * GH + GH + 2 * H : nullptr;
  const T* peep = k.p ? k.p + d * 3 * H : nullptr;
  const CellFns fns = k.s.cell_fns(d);
  for (int64_t step = 0; step < k.steps; ++step) {
    // GRU without linear_before_reset multiplies r into h before R_h: its n-gate product comes below.
    const int64_t rec_cols = k.gru() && !k.s.linear_before_reset ? 2 * H : GH;
    if (B > 0 && H > 0) gemm(false, true, B, rec_cols, H, T(1), h.data(), H, k.R(d), H, T(0), rec.data(), GH);
    if (k.gru() && !k.s.linear_before_reset) {
      for (int64_t b = 0; b < B; ++b) {
        int64_t t = k.time_of(d, step, b);
        for (int64_t j = 0; j < H; ++j) {
          T r_gate = t < 0 ? T(0) : gru_reset(fns, proj[(t * B + b) * GH + H + j], rec[b * GH + H + j]);
          rh[b * H + j] = r_gate * h[b * H + j];
        }
      }
      if (B > 0 && H > 0) gemm(false, true, B, H, H, T(1), rh.data(), H, k.R(d) + 2 * H * H, H, T(0), nrec.data(), H);
    }
    for (int64_t b = 0; b < B; ++b) {
      const int64_t t = k.time_of(d, step, b);
      if (t < 0) continue;
      const T* px = &proj[(t * B + b) * GH];
      const T* pr = &rec[b * GH];
      T* sv = o.saved ? o.saved + k.saved_at(d, t, b) : nullptr;
      T* hb = &h[b * H];
      T* cb = &c[b * H];
      for (int64_t j = 0; j < H; ++j) {
        CellStep<T> st;
        if (k.lstm()) {
          const T xv[4] = {px[j], px[H + j], px[2 * H + j], px[3 * H + j]};
          const T rv[4] = {pr[j], pr[H + j], pr[2 * H + j], pr[3 * H + j]};
          st = lstm_step(fns, xv, rv, peep ? peep[j] : T(0), peep ? peep[H + j] : T(0), peep ? peep[2 * H + j] : T(0),
                         cb[j]);
          cb[j] = st.extra;
        } else if (k.gru()) {
          const T xv[3] = {px[j], px[H + j], px[2 * H + j]};
          const T rn = k.s.linear_before_reset ? pr[2 * H + j] : nrec[b * H + j];
          st = gru_step(fns, xv, pr[j], pr[H + j], rn, rb_n ? rb_n[j] : T(0), hb[j]);
        } else {
          st = rnn_step(fns, px[j], pr[j]);
        }
        if (sv) {
          for (int64_t g = 0; g < k.G; ++g) sv[g * H + j] = st.a[g];
          sv[k.G * H + j] = st.h;
          sv[(k.G + 1) * H + j] = st.extra;
        }
        if (o.y) o.y[k.y_at(t, d, b) + j] = st.h;
        hb[j] = st.h;
      }
    }
  }
  for (int64_t b = 0; b < B; ++b) {
    if (o.y_h) std::memcpy(o.y_h + k.state_at(d, b), &h[b * H], H * sizeof(T));
    if (o.y_c) std::memcpy(o.y_c + k.state_at(d, b), &c[b * H], H * sizeof(T));
  }
}

Status recurrent_forward(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Status st;
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    auto k = read_inputs<T>(ctx);
    if (!k.ok()) {
      st = k.status();
      return;
    }
    Outputs<T> o;
    auto out = [&](size_t i) { return zeroed_output<T>(ctx, i); };
    o.y = out(0);
    o.y_h = out(1);
    if (k->lstm()) o.y_c = out(2);
    o.saved = out(saved_index(k->s));
    std::vector<T> xs = k->inputs_by_time();
    for (int64_t d = 0; d < k->D; ++d) forward_direction(*k, d, xs, o);
  });
  if (!ok) return unsupported_dtype(ctx, x.dtype());
  return st;
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("RNN", 7, 1000, recurrent_forward);
ORT_REGISTER_CPU_KERNEL("GRU", 7, 1000, recurrent_forward);
ORT_REGISTER_CPU_KERNEL("LSTM", 7, 1000, recurrent_forward);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "RNNTraining", 1, 1000, DeviceKind::kCpu, recurrent_forward);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "GRUTraining", 1, 1000, DeviceKind::kCpu, recurrent_forward);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "LSTMTraining", 1, 1000, DeviceKind::kCpu, recurrent_forward);

}  // namespace ort_train
