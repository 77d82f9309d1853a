// One hidden unit of one step of ONNX's RNN, GRU and LSTM cells, forward and
// backward: the arithmetic both the CPU kernels (runtime/cpu/kernels/
// recurrent*.cc) and the CUDA kernels (cuda_kernels/recurrent.cu) run, so the
// two devices compute the same thing. The GEMMs around it (the input
// projection, the products with R) are the callers'.
//
// Names: `x*` the input projection's part of a gate's pre-activation (with the
// biases that add to it), `r*` the recurrent product's, `a` the pre-activation
// before the clip; LSTM gates in ONNX's order i, o, f, c; GRU's z, r, n.
#pragma once
#include "numerics/recurrent_activations.h"

namespace ort_train {

// A direction's activations (f, g, h: LSTM uses all three, GRU f and g, RNN f)
// and the cell's switches, passed by value to device kernels.
struct CellFns {
  RnnActivationFn f, g, h;
  float clip = 0.f;  // 0: none
  bool input_forget = false;
  bool linear_before_reset = false;
};

template <typename T>
ORT_HOST_DEVICE T cell_clip(const CellFns& c, T a) {
  if (c.clip <= 0.f) return a;
  const T m = static_cast<T>(c.clip);
  return a < -m ? -m : (a > m ? m : a);
}
template <typename T>
ORT_HOST_DEVICE T cell_act(const CellFns& c, const RnnActivationFn& fn, T a) {
  return rnn_activation<T>(fn, cell_clip(c, a));
}
// The activation's derivative at the clipped value, zero where the clip cut.
template <typename T>
ORT_HOST_DEVICE T cell_dact(const CellFns& c, const RnnActivationFn& fn, T a) {
  const bool cut = c.clip > 0.f && (a < -static_cast<T>(c.clip) || a > static_cast<T>(c.clip));
  return cut ? T(0) : rnn_activation_derivative<T>(fn, cell_clip(c, a));
}

// --- forward -------------------------------------------------------------

template <typename T>
struct CellStep {
  T a[4];     // pre-activations (G of them)
  T h;        // the new hidden state
  T extra;    // LSTM: the new cell state; GRU: R_h h + Rb_h (linear_before_reset) or r * h
};

// `p*`: the peepholes (0 without); `c_prev`: the cell state before the step.
template <typename T>
ORT_HOST_DEVICE CellStep<T> lstm_step(const CellFns& c, const T x[4], const T r[4], T pi, T po, T pf, T c_prev) {
  CellStep<T> s;
  s.a[0] = x[0] + r[0] + pi * c_prev;
  s.a[2] = x[2] + r[2] + pf * c_prev;
  s.a[3] = x[3] + r[3];
  const T i = cell_act(c, c.f, s.a[0]);
  const T f = c.input_forget ? T(1) - i : cell_act(c, c.f, s.a[2]);
  const T c_new = f * c_prev + i * cell_act(c, c.g, s.a[3]);
  s.a[1] = x[1] + r[1] + po * c_new;
  s.h = cell_act(c, c.f, s.a[1]) * cell_act(c, c.h, c_new);
  s.extra = c_new;
  return s;
}

// `rn`: with linear_before_reset, R_h h (its bias `rbn` added here); without,
// (r * h) R_h^T, which the caller formed from this step's r (gru_reset).
template <typename T>
ORT_HOST_DEVICE CellStep<T> gru_step(const CellFns& c, const T x[3], T rz, T rr, T rn, T rbn, T h_prev) {
  CellStep<T> s;
  s.a[0] = x[0] + rz;
  s.a[1] = x[1] + rr;
  const T z = cell_act(c, c.f, s.a[0]), r = cell_act(c, c.f, s.a[1]);
  if (c.linear_before_reset) {
    s.extra = rn + rbn;
    s.a[2] = x[2] + r * s.extra;
  } else {
    s.extra = r * h_prev;
    s.a[2] = x[2] + rn;
  }
  s.a[3] = T(0);
  s.h = (T(1) - z) * cell_act(c, c.g, s.a[2]) + z * h_prev;
  return s;
}

// GRU without linear_before_reset: r, to form (r * h) R_h^T before gru_step.
template <typename T>
ORT_HOST_DEVICE T gru_reset(const CellFns& c, T xr, T rr) { return cell_act(c, c.f, xr + rr); }

template <typename T>
ORT_HOST_DEVICE CellStep<T> rnn_step(const CellFns& c, T x, T r) {
  CellStep<T> s;
  s.a[0] = x + r;
  s.a[1] = s.a[2] = s.a[3] = T(0);
  s.h = cell_act(c, c.f, s.a[0]);
  s.extra = T(0);
  return s;
}

// --- backward ------------------------------------------------------------

template <typename T>
struct CellGrad {
  T dx[4];      // d pre-activation: the input projection's (and Wb's) gradient
  T dr[4];      // the recurrent product's side: dx, except GRU's n gate
  T direct;     // d h_prev's part that does not go through R
  T dc_prev;    // LSTM: d c_prev
  T dp[3];      // LSTM: the peepholes' (i, o, f) gradient from this element
};

// `dh`: d h of the step (the carry plus dY); `dc`: LSTM's carried d c.
template <typename T>
ORT_HOST_DEVICE CellGrad<T> lstm_step_grad(const CellFns& c, const T a[4], T c_new, T c_prev, T dh, T dc, T pi, T po,
                                           T pf) {
  CellGrad<T> g{};
  const T i = cell_act(c, c.f, a[0]), o = cell_act(c, c.f, a[1]);
  const T f = c.input_forget ? T(1) - i : cell_act(c, c.f, a[2]);
  const T cc = cell_act(c, c.g, a[3]);
  const T dao = dh * cell_act(c, c.h, c_new) * cell_dact(c, c.f, a[1]);
  T dct = dc + dh * o * cell_dact(c, c.h, c_new) + dao * po;
  T di = dct * cc;
  const T dff = dct * c_prev;
  T daf = T(0);
  if (c.input_forget) di -= dff;
  else daf = dff * cell_dact(c, c.f, a[2]);
  const T dai = di * cell_dact(c, c.f, a[0]);
  const T dac = dct * i * cell_dact(c, c.g, a[3]);
  g.dc_prev = dct * f + dai * pi + daf * pf;
  g.dp[0] = dai * c_prev;
  g.dp[1] = dao * c_new;
  g.dp[2] = daf * c_prev;
  g.dx[0] = g.dr[0] = dai;
  g.dx[1] = g.dr[1] = dao;
  g.dx[2] = g.dr[2] = daf;
  g.dx[3] = g.dr[3] = dac;
  g.direct = T(0);
  return g;
}

// GRU's n-gate pre-activation gradient, which linear_before_reset = 0 needs
// first: its product with R_h (d_rh below) feeds r's gradient.
template <typename T>
ORT_HOST_DEVICE T gru_dn(const CellFns& c, const T a[3], T dh) {
  return dh * (T(1) - cell_act(c, c.f, a[0])) * cell_dact(c, c.g, a[2]);
}

// `extra`: the step's saved R_h h + Rb_h (linear_before_reset); `d_rh`:
// (gru_dn R_h) for this unit (without linear_before_reset).
template <typename T>
ORT_HOST_DEVICE CellGrad<T> gru_step_grad(const CellFns& c, const T a[3], T extra, T h_prev, T dh, T d_rh) {
  CellGrad<T> g{};
  const T z = cell_act(c, c.f, a[0]), r = cell_act(c, c.f, a[1]), n = cell_act(c, c.g, a[2]);
  const T dan = gru_dn(c, a, dh);
  T dr;
  g.direct = dh * z;
  if (c.linear_before_reset) {
    dr = dan * extra;
    g.dr[2] = dan * r;  // through R_h h + Rb_h
  } else {
    dr = d_rh * h_prev;
    g.direct += d_rh * r;
    g.dr[2] = dan;
  }
  g.dx[0] = g.dr[0] = dh * (h_prev - n) * cell_dact(c, c.f, a[0]);
  g.dx[1] = g.dr[1] = dr * cell_dact(c, c.f, a[1]);
  g.dx[2] = dan;
  return g;
}

template <typename T>
ORT_HOST_DEVICE CellGrad<T> rnn_step_grad(const CellFns& c, T a, T dh) {
  CellGrad<T> g{};
  g.dx[0] = g.dr[0] = dh * cell_dact(c, c.f, a);
  return g;
}

}  // namespace ort_train
