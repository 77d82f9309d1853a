#include "cuda_kernels/launch.cuh"
#include "cuda_kernels/recurrent.h"

namespace ort_train::cuda {
namespace {

// Indexing, as the CPU kernels' Recurrent<T> (runtime/cpu/kernels/recurrent.h).
__device__ int64_t time_of(const RecurrentDirection& g, int64_t step, int64_t b) {
  int64_t len = g.lens[b];
  if (step >= len) return -1;
  return g.backwards ? len - 1 - step : step;
}
__device__ int64_t y_at(const RecurrentDirection& g, int64_t t, int64_t b) {
  return (g.layout == 0 ? (t * g.directions + g.d) * g.batch + b : (b * g.steps + t) * g.directions + g.d) * g.hidden;
}
__device__ int64_t state_at(const RecurrentDirection& g, int64_t b) {
  return (g.layout == 0 ? g.d * g.batch + b : b * g.directions + g.d) * g.hidden;
}
__device__ int64_t saved_at(const RecurrentDirection& g, int64_t t, int64_t b) {
  return ((g.d * g.steps + t) * g.batch + b) * (g.gates + 2) * g.hidden;
}

#define ORT_RECURRENT_LOOP(n) \
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < (n); e += int64_t{gridDim.x} * blockDim.x)

template <typename T>
__global__ void step_kernel(RecurrentDirection g, CellFns fns, int64_t step, const T* proj, const T* rec,
                            const T* nrec, const T* rb_n, const T* peep, T* h, T* c, T* y, T* saved) {
  const int64_t H = g.hidden, GH = g.gates * H;
  ORT_RECURRENT_LOOP(g.batch * H) {
    const int64_t b = e / H, j = e % H, t = time_of(g, step, b);
    if (t < 0) continue;
    const T* px = proj + (t * g.batch + b) * GH;
    const T* pr = rec + b * GH;
    CellStep<T> st;
    if (g.cell == 2) {
      const T xv[4] = {px[j], px[H + j], px[2 * H + j], px[3 * H + j]};
      const T rv[4] = {pr[j], pr[H + j], pr[2 * H + j], pr[3 * H + j]};
      st = lstm_step(fns, xv, rv, peep ? peep[j] : T(0), peep ? peep[H + j] : T(0), peep ? peep[2 * H + j] : T(0),
                     c[e]);
      c[e] = st.extra;
    } else if (g.cell == 1) {
      const T xv[3] = {px[j], px[H + j], px[2 * H + j]};
      const T rn = fns.linear_before_reset ? pr[2 * H + j] : nrec[e];
      st = gru_step(fns, xv, pr[j], pr[H + j], rn, rb_n ? rb_n[j] : T(0), h[e]);
    } else {
      st = rnn_step(fns, px[j], pr[j]);
    }
    if (saved) {
      T* sv = saved + saved_at(g, t, b);
      for (int64_t q = 0; q < g.gates; ++q) sv[q * H + j] = st.a[q];
      sv[g.gates * H + j] = st.h;
      sv[(g.gates + 1) * H + j] = st.extra;
    }
    if (y) y[y_at(g, t, b) + j] = st.h;
    h[e] = st.h;
  }
}

template <typename T>
__global__ void gru_reset_kernel(RecurrentDirection g, CellFns fns, int64_t step, const T* proj, const T* rec,
                                 const T* h, T* rh) {
  const int64_t H = g.hidden, GH = g.gates * H;
  ORT_RECURRENT_LOOP(g.batch * H) {
    const int64_t b = e / H, j = e % H, t = time_of(g, step, b);
    rh[e] = t < 0 ? T(0) : gru_reset(fns, proj[(t * g.batch + b) * GH + H + j], rec[b * GH + H + j]) * h[e];
  }
}

template <typename T>
__global__ void gate_bias_kernel(T* proj, const T* wb, const T* rb, int64_t rows, int64_t gh, int64_t hidden,
                                 bool skip_rb_n) {
  ORT_RECURRENT_LOOP(rows * gh) {
    const int64_t j = e % gh;
    proj[e] += wb[j] + (skip_rb_n && j >= 2 * hidden ? T(0) : rb[j]);
  }
}

template <typename T>
__global__ void state_copy_kernel(RecurrentDirection g, const T* src, T* dst, bool to_state) {
  ORT_RECURRENT_LOOP(g.batch * g.hidden) {
    const int64_t b = e / g.hidden, j = e % g.hidden, s = state_at(g, b) + j;
    if (to_state) dst[s] = src[e];
    else dst[e] = src[s];
  }
}

// The state a step started from: the step before it, or the initial state.
template <typename T>
__device__ T previous(const RecurrentDirection& g, const T* saved, const T* initial, int64_t step, int64_t b,
                      int64_t offset, int64_t j) {
  if (step == 0) return initial ? initial[state_at(g, b) + j] : T(0);
  return saved[saved_at(g, time_of(g, step - 1, b), b) + offset + j];
}

template <typename T>
__global__ void step_grad_kernel(RecurrentDirection g, CellFns fns, int64_t step, RecurrentGradBuffers buf) {
  const int64_t H = g.hidden, G = g.gates, GH = G * H;
  const T* saved = static_cast<const T*>(buf.saved);
  const T* dy = static_cast<const T*>(buf.dy);
  const T* peep = static_cast<const T*>(buf.peep);
  T* dh = static_cast<T*>(buf.dh);
  T* dc = static_cast<T*>(buf.dc);
  ORT_RECURRENT_LOOP(g.batch * H) {
    const int64_t b = e / H, j = e % H, t = time_of(g, step, b);
    T* step_d = static_cast<T*>(buf.step_d) + b * GH;
    if (t < 0) {
      for (int64_t q = 0; q < G; ++q) step_d[q * H + j] = T(0);
      continue;
    }
    const int64_t row = t * g.batch + b;
    const T* sv = saved + saved_at(g, t, b);
    const T dht = dh[e] + (dy ? dy[y_at(g, t, b) + j] : T(0));
    const T h_prev = previous(g, saved, static_cast<const T*>(buf.h0), step, b, G * H, j);
    static_cast<T*>(buf.h_prev)[row * H + j] = h_prev;
    const T a[4] = {sv[j], G > 1 ? sv[H + j] : T(0), G > 2 ? sv[2 * H + j] : T(0), G > 3 ? sv[3 * H + j] : T(0)};
    const T extra = sv[(G + 1) * H + j];
    CellGrad<T> cg;
    if (g.cell == 2) {
      const T c_prev = previous(g, saved, static_cast<const T*>(buf.c0), step, b, (G + 1) * H, j);
      cg = lstm_step_grad(fns, a, extra, c_prev, dht, dc[e], peep ? peep[j] : T(0), peep ? peep[H + j] : T(0),
                          peep ? peep[2 * H + j] : T(0));
      dc[e] = cg.dc_prev;
      if (buf.dp_rows)
        for (int64_t q = 0; q < 3; ++q) static_cast<T*>(buf.dp_rows)[row * 3 * H + q * H + j] = cg.dp[q];
    } else if (g.cell == 1) {
      const T d_rh = fns.linear_before_reset ? T(0) : static_cast<const T*>(buf.d_rh)[e];
      cg = gru_step_grad(fns, a, extra, h_prev, dht, d_rh);
      if (!fns.linear_before_reset) static_cast<T*>(buf.rh_prev)[row * H + j] = cell_act(fns, fns.f, a[1]) * h_prev;
    } else {
      cg = rnn_step_grad(fns, a[0], dht);
    }
    T* dxg = static_cast<T*>(buf.dxg) + row * GH;
    T* drg = static_cast<T*>(buf.drg) + row * GH;
    for (int64_t q = 0; q < G; ++q) {
      dxg[q * H + j] = cg.dx[q];
      drg[q * H + j] = cg.dr[q];
      // GRU's n gate without linear_before_reset reached h_prev through d_rh already.
      const bool via_d_rh = g.cell == 1 && q == 2 && !fns.linear_before_reset;
      step_d[q * H + j] = via_d_rh ? T(0) : cg.dr[q];
    }
    static_cast<T*>(buf.carry)[e] = cg.direct;
  }
}

template <typename T>
__global__ void gru_dn_kernel(RecurrentDirection g, CellFns fns, int64_t step, const T* saved, const T* dy,
                              const T* dh, T* dn) {
  const int64_t H = g.hidden;
  ORT_RECURRENT_LOOP(g.batch * H) {
    const int64_t b = e / H, j = e % H, t = time_of(g, step, b);
    if (t < 0) {
      dn[e] = T(0);
      continue;
    }
    const T* sv = saved + saved_at(g, t, b);
    const T a[3] = {sv[j], sv[H + j], sv[2 * H + j]};
    dn[e] = gru_dn(fns, a, dh[e] + (dy ? dy[y_at(g, t, b) + j] : T(0)));
  }
}

template <typename T>
__global__ void carry_dh_kernel(RecurrentDirection g, int64_t step, const T* carry, const T* through_r, T* dh) {
  ORT_RECURRENT_LOOP(g.batch * g.hidden) {
    if (time_of(g, step, e / g.hidden) >= 0) dh[e] = carry[e] + through_r[e];
  }
}

#undef ORT_RECURRENT_LOOP

// float32 and float64 only: the recurrent kernels compute in the input's type.
#define ORT_RECURRENT_DISPATCH(t, launch)                    \
  switch (t) {                                               \
    case ElemType::kF32: { using T = float; launch; break; }  \
    case ElemType::kF64: { using T = double; launch; break; } \
    default: return cudaErrorInvalidValue;                   \
  }                                                          \
  return cudaGetLastError();

}  // namespace

cudaError_t launch_recurrent_step(ElemType t, const RecurrentDirection& g, const CellFns& fns, int64_t step,
                                  const void* proj, const void* rec, const void* nrec, const void* rb_n,
                                  const void* peep, void* h, void* c, void* y, void* saved, cudaStream_t s) {
  if (g.batch * g.hidden == 0) return cudaSuccess;
  ORT_RECURRENT_DISPATCH(t, (step_kernel<T><<<blocks_for(g.batch * g.hidden), kThreads, 0, s>>>(
                                g, fns, step, static_cast<const T*>(proj), static_cast<const T*>(rec),
                                static_cast<const T*>(nrec), static_cast<const T*>(rb_n), static_cast<const T*>(peep),
                                static_cast<T*>(h), static_cast<T*>(c), static_cast<T*>(y), static_cast<T*>(saved))))
}

cudaError_t launch_gru_reset_product(ElemType t, const RecurrentDirection& g, const CellFns& fns, int64_t step,
                                     const void* proj, const void* rec, const void* h, void* rh, cudaStream_t s) {
  if (g.batch * g.hidden == 0) return cudaSuccess;
  ORT_RECURRENT_DISPATCH(t, (gru_reset_kernel<T><<<blocks_for(g.batch * g.hidden), kThreads, 0, s>>>(
                                g, fns, step, static_cast<const T*>(proj), static_cast<const T*>(rec),
                                static_cast<const T*>(h), static_cast<T*>(rh))))
}

cudaError_t launch_add_gate_bias(ElemType t, void* proj, const void* wb, const void* rb, int64_t rows, int64_t gh,
                                 int64_t hidden, bool skip_rb_n, cudaStream_t s) {
  if (rows * gh == 0) return cudaSuccess;
  ORT_RECURRENT_DISPATCH(t, (gate_bias_kernel<T><<<blocks_for(rows * gh), kThreads, 0, s>>>(
                                static_cast<T*>(proj), static_cast<const T*>(wb), static_cast<const T*>(rb), rows, gh,
                                hidden, skip_rb_n)))
}

cudaError_t launch_state_copy(ElemType t, const RecurrentDirection& g, const void* src, void* dst, bool to_state,
                              cudaStream_t s) {
  if (g.batch * g.hidden == 0) return cudaSuccess;
  ORT_RECURRENT_DISPATCH(t, (state_copy_kernel<T><<<blocks_for(g.batch * g.hidden), kThreads, 0, s>>>(
                                g, static_cast<const T*>(src), static_cast<T*>(dst), to_state)))
}

cudaError_t launch_recurrent_step_grad(ElemType t, const RecurrentDirection& g, const CellFns& fns, int64_t step,
                                       const RecurrentGradBuffers& buf, cudaStream_t s) {
  if (g.batch * g.hidden == 0) return cudaSuccess;
  ORT_RECURRENT_DISPATCH(t, (step_grad_kernel<T><<<blocks_for(g.batch * g.hidden), kThreads, 0, s>>>(g, fns, step,
                                                                                                    buf)))
}

cudaError_t launch_gru_dn(ElemType t, const RecurrentDirection& g, const CellFns& fns, int64_t step,
                          const void* saved, const void* dy, const void* dh, void* dn, cudaStream_t s) {
  if (g.batch * g.hidden == 0) return cudaSuccess;
  ORT_RECURRENT_DISPATCH(t, (gru_dn_kernel<T><<<blocks_for(g.batch * g.hidden), kThreads, 0, s>>>(
                                g, fns, step, static_cast<const T*>(saved), static_cast<const T*>(dy),
                                static_cast<const T*>(dh), static_cast<T*>(dn))))
}

cudaError_t launch_carry_dh(ElemType t, const RecurrentDirection& g, int64_t step, const void* carry,
                            const void* through_r, void* dh, cudaStream_t s) {
  if (g.batch * g.hidden == 0) return cudaSuccess;
  ORT_RECURRENT_DISPATCH(t, (carry_dh_kernel<T><<<blocks_for(g.batch * g.hidden), kThreads, 0, s>>>(
                                g, step, static_cast<const T*>(carry), static_cast<const T*>(through_r),
                                static_cast<T*>(dh))))
}

}  // namespace ort_train::cuda
