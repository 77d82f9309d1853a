// The row arithmetic of attention computed with materialised scores (the
// "gemm" candidate on the CPU, "cublas" on the GPU): GEMMs make a whole
// [T, S] block of scale * q.k products per head, and these functions turn one
// row of it into probabilities, and in the backward into the score gradient.
// Host/device, so the CPU candidate runs the very arithmetic the CUDA row
// kernels run and host tests check it.
//
// A row is split over `lanes` workers (a warp's 32 lanes on the GPU, one on
// the CPU): each call handles elements lane, lane + lanes, ... and returns
// its partial max or sum; the caller reduces over the lanes between calls.
//
// Row index: row = (b * H + h) * T + t, the layout of Q, O and LSE.
#pragma once
#include <cmath>

#include "cuda_kernels/attention.h"

namespace ort_train {

// Rows of Q (and O, dO, dQ) per key/value head: the group's heads' queries,
// adjacent in Q's [B, H, T, D] layout, so one GEMM covers the group.
ORT_HOST_DEVICE int64_t attention_group_rows(const AttentionGeometry& g) { return g.heads / g.kv_heads * g.queries; }

// Whether any size is 0: a BLAS refuses a leading dimension of 0, so such
// calls go to the kernels that need no GEMM of the whole block.
ORT_HOST_DEVICE bool attention_has_empty_size(const AttentionGeometry& g) {
  return g.batch * g.heads * g.queries * g.keys * g.head_size * g.value_size == 0;
}

// The [b, h, t] of a row.
struct AttentionRow {
  int64_t b, h, t;
};
ORT_HOST_DEVICE AttentionRow attention_row(const AttentionGeometry& g, int64_t row) {
  return {row / (g.queries * g.heads), (row / g.queries) % g.heads, row % g.queries};
}

// Forward pass 1: x holds the row's scale * q.k; makes it the scores (filled,
// bias added) and returns the maximum over this lane's elements.
template <typename T>
ORT_HOST_DEVICE T attention_row_scores(const AttentionGeometry& g, const T* bias, const bool* mask, int64_t row, T* x,
                                       int64_t lane, int64_t lanes) {
  AttentionRow r = attention_row(g, row);
  T mx = -INFINITY;
  for (int64_t s = lane; s < g.keys; s += lanes) {
    T v = attention_score<T>(g, x[s], bias, mask, r.b, r.h, r.t, s);
    x[s] = v;
    mx = mx > v ? mx : v;
  }
  return mx;
}

// What the exponentials are shifted by: the row maximum, or 0 when every
// score is -inf (the sum is then 0 and the row NaN, as Softmax gives).
template <typename T>
ORT_HOST_DEVICE T attention_row_shift(T max) {
  using std::isinf;
  return isinf(max) ? T(0) : max;
}

// Forward pass 2: x[s] = exp(x[s] - shift); returns this lane's sum.
template <typename T>
ORT_HOST_DEVICE T attention_row_exp(const AttentionGeometry& g, T* x, T shift, int64_t lane, int64_t lanes) {
  using std::exp;
  T sum = 0;
  for (int64_t s = lane; s < g.keys; s += lanes) {
    T p = exp(x[s] - shift);
    x[s] = p;
    sum += p;
  }
  return sum;
}

// Forward pass 3: x[s] becomes the dropped probability exp(..) / sum * factor,
// what O = P V is made of.
template <typename T>
ORT_HOST_DEVICE void attention_row_probs(const AttentionGeometry& g, int64_t row, T* x, T sum, int64_t lane,
                                         int64_t lanes) {
  AttentionRow r = attention_row(g, row);
  T inv = T(1) / sum;
  for (int64_t s = lane; s < g.keys; s += lanes) x[s] = x[s] * inv * attention_dropout_factor<T>(g, r.b, r.h, r.t, s);
}

// The row's log-sum-exp, all the backward keeps of the probabilities.
template <typename T>
ORT_HOST_DEVICE T attention_row_lse(T shift, T sum) {
  using std::log;
  return shift + log(sum);
}

// dO . O over this lane's components: the sum over keys of P * dP that
// softmax's gradient subtracts.
template <typename T>
ORT_HOST_DEVICE T attention_row_dot(const T* dout_row, const T* out_row, int64_t n, int64_t lane, int64_t lanes) {
  T sum = 0;
  for (int64_t e = lane; e < n; e += lanes) sum += dout_row[e] * out_row[e];
  return sum;
}

// Backward: x holds the row's scale * q.k again, y its dO . v (the gradient
// of the dropped probabilities). Afterwards x holds the dropped probabilities
// (dV's weights of dO) and y the score gradient with filled scores zeroed
// (dQ's and dK's weights); `dscores` (may be null) gets the unzeroed score
// gradient, the bias's.
template <typename T>
ORT_HOST_DEVICE void attention_row_grad(const AttentionGeometry& g, const T* bias, const bool* mask, int64_t row,
                                        T lse, T row_dot, T* x, T* y, T* dscores, int64_t lane, int64_t lanes) {
  using std::exp;
  using std::isinf;
  AttentionRow r = attention_row(g, row);
  bool empty = isinf(lse);
  for (int64_t s = lane; s < g.keys; s += lanes) {
    T score = attention_score<T>(g, x[s], bias, mask, r.b, r.h, r.t, s);
    T p = empty ? T(0) : exp(score - lse);
    T factor = attention_dropout_factor<T>(g, r.b, r.h, r.t, s);
    T ds = p * (y[s] * factor - row_dot);
    if (dscores) dscores[s] = ds;
    x[s] = p * factor;
    // A filled score is a constant: no gradient reaches Q and K through it.
    y[s] = attention_filled(g, mask, r.b, r.h, r.t, s) ? T(0) : ds;
  }
}

}  // namespace ort_train
