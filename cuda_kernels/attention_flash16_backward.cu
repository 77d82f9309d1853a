// FlashAttention-2's backward for 16-bit attention (attention_flash16.h).
// Everything is computed with keys as rows, so the products that contract
// over queries (dV = P^T dO, dK = dS^T Q) read the probabilities and the
// score gradient straight from the registers that made them, as A tiles:
//   S^T = K Q^T, P^T = exp(S^T - LSE), dP^T = V dO^T,
//   dS^T = P^T (dP^T * dropout - rowdot(dO, O)),
//   dV += P^T(dropped) dO, dK += scale dS^T Q,
//   dQ += scale dS K: dS^T goes through shared memory (read transposed) and
//   each warp adds its queries' rows into float32 dQ with atomics.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda_kernels/attention_flash16.h"
#include "cuda_kernels/mma_fragments.h"
#include "cuda_kernels/mma_sync.cuh"
#include "numerics/float16.h"

namespace ort_train {
namespace {

constexpr int kWarps = 4;
constexpr int kKeys = 16 * kWarps;  // keys per block: 16 per warp
constexpr int kQueries = 64;        // queries per tile
constexpr int D = 64;               // head and value size

template <typename H>
__global__ void __launch_bounds__(kWarps * 32)
    flash16_backward(AttentionGeometry g, const H* dout, const H* q, const H* k, const H* v, const H* out,
                     const float* lse, const float* bias, const bool* mask, float* dq32, H* dk, H* dv,
                     float* dscores) {
  __shared__ uint16_t ks[kKeys][D];        // this block's keys, for dQ
  __shared__ uint16_t qs[kQueries][D];     // the query tile
  __shared__ uint16_t dos[kQueries][D];    // its dO
  __shared__ uint16_t dst[kKeys][kQueries];  // dS^T (zeroed where filled), rounded
  __shared__ float lse_s[kQueries], dot_s[kQueries];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t b = blockIdx.y / g.kv_heads, kh = blockIdx.y % g.kv_heads;
  const int64_t group = g.heads / g.kv_heads;
  const int64_t T = g.queries, S = g.keys;
  const int64_t s0 = static_cast<int64_t>(blockIdx.x) * kKeys, w0 = s0 + warp * 16;
  const float scale = static_cast<float>(g.scale);
  const H* kh_base = k + (b * g.kv_heads + kh) * S * D;
  const H* vh_base = v + (b * g.kv_heads + kh) * S * D;

  for (int e = threadIdx.x; e < kKeys * D; e += kWarps * 32) {
    int r = e / D, c = e % D;
    ks[r][c] = s0 + r < S ? kh_base[(s0 + r) * D + c].bits : 0;
  }
  uint32_t ka[D / 16][4], va[D / 16][4];  // this warp's 16 keys of K and V as A tiles
  load_a_rows<H, D>(kh_base, w0, S, lane, ka);
  load_a_rows<H, D>(vh_base, w0, S, lane, va);
  float dk_acc[D / 8][4] = {}, dv_acc[D / 8][4] = {};

  for (int64_t hh = 0; hh < group; ++hh) {
    const int64_t h = kh * group + hh, bh = b * g.heads + h;
    const H* qh = q + bh * T * D;
    const H* doh = dout + bh * T * D;
    const H* oh = out + bh * T * D;
    for (int64_t q0 = 0; q0 < T; q0 += kQueries) {
      __syncthreads();  // the previous tile's readers are done
      for (int e = threadIdx.x; e < kQueries * D; e += kWarps * 32) {
        int r = e / D, c = e % D;
        bool in = q0 + r < T;
        qs[r][c] = in ? qh[(q0 + r) * D + c].bits : 0;
        dos[r][c] = in ? doh[(q0 + r) * D + c].bits : 0;
      }
      for (int r = threadIdx.x; r < kQueries; r += kWarps * 32) {  // LSE and dO . O per query
        int64_t t = q0 + r;
        float dot = 0.f;
        if (t < T)
          for (int d = 0; d < D; ++d)
            dot += static_cast<float>(doh[t * D + d]) * static_cast<float>(oh[t * D + d]);
        dot_s[r] = dot;
        lse_s[r] = t < T ? lse[bh * T + t] : 0.f;
      }
      __syncthreads();

      float p[kQueries / 8][4], dp[kQueries / 8][4];
      rows_times_tile_t<H, D, kQueries>(ka, qs, lane, p);   // S^T, scale not yet applied
      rows_times_tile_t<H, D, kQueries>(va, dos, lane, dp);  // dP^T
      float pd[kQueries / 8][4];               // P^T dropped
#pragma unroll
      for (int nb = 0; nb < kQueries / 8; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          MmaIndex c = mma_c_index(lane, i);
          int64_t s = w0 + c.row;
          int ql = nb * 8 + c.col;
          int64_t t = q0 + ql;
          float prob = 0.f, factor = 1.f, ds = 0.f;
          bool filled = false;
          if (s < S && t < T) {
            float x = attention_score<float>(g, scale * p[nb][i], bias, mask, b, h, t, s);
            prob = isinf(lse_s[ql]) ? 0.f : expf(x - lse_s[ql]);
            factor = attention_dropout_factor<float>(g, b, h, t, s);
            ds = prob * (dp[nb][i] * factor - dot_s[ql]);
            filled = attention_filled(g, mask, b, h, t, s);
            if (dscores) dscores[(bh * T + t) * S + s] = ds;
          }
          pd[nb][i] = prob * factor;
          p[nb][i] = filled ? 0.f : ds;  // from here on: dS^T, zeroed where the mask filled the score
          dst[warp * 16 + c.row][ql] = H(p[nb][i]).bits;
        }
      c_tiles_times_tile<H, D, kQueries>(pd, dos, lane, dv_acc);  // dV += P^T dO
      c_tiles_times_tile<H, D, kQueries>(p, qs, lane, dk_acc);    // dK += dS^T Q (scale at the end)
      __syncthreads();

      // dQ rows of this warp's 16 queries: dS (16 x 64 keys, read from dS^T) times K.
      float dq_acc[D / 8][4] = {};
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        uint32_t a[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          MmaIndex at = mma_a_index(lane, 2 * r);  // (query, key) of the pair's first value
          int ql = warp * 16 + at.row, key = kk * 16 + at.col;
          a[r] = pack16x2(dst[key][ql], dst[key + 1][ql]);
        }
        a_times_tile_rows<H, D>(a, ks, kk * 16, lane, dq_acc);
      }
#pragma unroll
      for (int nd = 0; nd < D / 8; ++nd)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          MmaIndex c = mma_c_index(lane, i);
          int64_t t = q0 + warp * 16 + c.row;
          if (t < T) atomicAdd(dq32 + (bh * T + t) * D + nd * 8 + c.col, scale * dq_acc[nd][i]);
        }
    }
  }
  const float scaled[2] = {scale, scale}, unscaled[2] = {1.f, 1.f};
  store_c_rows<H, D>(dk_acc, scaled, dk + (b * g.kv_heads + kh) * S * D, w0, S, lane);
  store_c_rows<H, D>(dv_acc, unscaled, dv + (b * g.kv_heads + kh) * S * D, w0, S, lane);
}

template <typename H>
__global__ void round_into(const float* src, H* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = H(src[i]);
}

template <typename H>
cudaError_t launch_typed(const AttentionGeometry& g, const void* dout, const void* q, const void* k, const void* v,
                         const void* out, const float* lse, const float* bias, const bool* mask, float* dq32,
                         void* dq, void* dk, void* dv, float* dscores, cudaStream_t stream) {
  int64_t dq_n = g.batch * g.heads * g.queries * D;
  cudaError_t e = cudaMemsetAsync(dq32, 0, static_cast<size_t>(dq_n) * sizeof(float), stream);
  if (e != cudaSuccess) return e;
  dim3 grid(static_cast<unsigned>((g.keys + kKeys - 1) / kKeys), static_cast<unsigned>(g.batch * g.kv_heads));
  flash16_backward<H><<<grid, kWarps * 32, 0, stream>>>(
      g, static_cast<const H*>(dout), static_cast<const H*>(q), static_cast<const H*>(k), static_cast<const H*>(v),
      static_cast<const H*>(out), lse, bias, mask, dq32, static_cast<H*>(dk), static_cast<H*>(dv), dscores);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  int64_t blocks = (dq_n + 255) / 256;
  round_into<H><<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(dq32, static_cast<H*>(dq),
                                                                                           dq_n);
  return cudaGetLastError();
}

}  // namespace

int launch_attention_flash16_backward(const AttentionGeometry& g, bool bf16, const void* dout, const void* q,
                                      const void* k, const void* v, const void* out, const float* lse,
                                      const float* bias, const bool* mask, float* dq32, void* dq, void* dk, void* dv,
                                      float* dscores, void* stream) {
  if (!attention_flash16_backward_supports(g) || g.batch * g.kv_heads > 65535) return cudaErrorInvalidValue;
  if (cudaError_t e = require_sm80(); e != cudaSuccess) return e;
  auto s = static_cast<cudaStream_t>(stream);
  return bf16 ? launch_typed<BFloat16>(g, dout, q, k, v, out, lse, bias, mask, dq32, dq, dk, dv, dscores, s)
              : launch_typed<Float16>(g, dout, q, k, v, out, lse, bias, mask, dq32, dq, dk, dv, dscores, s);
}

}  // namespace ort_train
