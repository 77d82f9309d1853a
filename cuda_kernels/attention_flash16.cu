#include "cuda_kernels/attention_flash16.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda_kernels/mma_fragments.h"
#include "cuda_kernels/mma_sync.cuh"
#include "numerics/float16.h"

namespace ort_train {
namespace {

constexpr int kWarps = 4;
constexpr int kRows = 16 * kWarps;  // query rows per block: 16 per warp
constexpr int kKeys = 64;           // keys per shared-memory tile
constexpr unsigned kFullMask = 0xffffffffu;

// The shift of a row's exponentials: its running maximum, or 0 while every
// score so far is -inf (attention_rows.h's attention_row_shift).
__device__ __forceinline__ float row_shift(float max) { return isinf(max) ? 0.f : max; }

// One block: kRows query rows of one (batch, head); warp w owns rows
// 16w .. 16w + 15 of them. Per key tile: S = scale Q K^T (float32), the
// scores (mask, bias), the running maxima, P = exp(S - max) rounded to 16
// bits, O = O * rescale + P V; at the end O / sum and LSE = max + log(sum).
template <typename H, int D>
__global__ void __launch_bounds__(kWarps * 32)
    flash16_forward(AttentionGeometry g, const H* q, const H* k, const H* v, const float* bias, const bool* mask,
                    H* out, float* lse) {
  __shared__ uint16_t ks[kKeys][D];  // the 16-bit values' bits (a __shared__ array takes no constructor)
  __shared__ uint16_t vs[kKeys][D];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t b = blockIdx.y / g.heads, h = blockIdx.y % g.heads;
  const int64_t kh = h / (g.heads / g.kv_heads);
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kRows + warp * 16;
  const int64_t T = g.queries, S = g.keys;
  const float scale = static_cast<float>(g.scale);
  const H* qh = q + (b * g.heads + h) * T * D;

  // This warp's 16 rows of Q as D / 16 A tiles.
  uint32_t qa[D / 16][4];
  load_a_rows<H, D>(qh, t0, T, lane, qa);
  float o[D / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY};  // running maxima of rows g and g + 8 (g = lane / 4)
  float l[2] = {0.f, 0.f};              // this lane's part of their sums

  for (int64_t s0 = 0; s0 < S; s0 += kKeys) {
    __syncthreads();  // the previous tile's readers are done
    for (int e = threadIdx.x; e < kKeys * D; e += kWarps * 32) {
      int r = e / D, c = e % D;
      int64_t s = s0 + r;
      ks[r][c] = s < S ? k[attention_key_offset(g, b, kh, s, c)].bits : 0;
      vs[r][c] = s < S ? v[((b * g.kv_heads + kh) * S + s) * D + c].bits : 0;
    }
    __syncthreads();

    // S = Q K^T: B(k = d, n = key) = K[key][d].
    float sc[kKeys / 8][4];
    rows_times_tile_t<H, D, kKeys>(qa, ks, lane, sc);

    // The scores and this tile's row maxima (over the 4 lanes of a row).
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nb = 0; nb < kKeys / 8; ++nb)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        MmaIndex c = mma_c_index(lane, i);
        int64_t t = t0 + c.row, s = s0 + nb * 8 + c.col;
        float x = s < S && t < T ? attention_score<float>(g, scale * sc[nb][i], bias, mask, b, h, t, s) : -INFINITY;
        sc[nb][i] = x;
        tile_max[i >> 1] = fmaxf(tile_max[i >> 1], x);
      }
    float shift[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(kFullMask, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(kFullMask, tile_max[r], 2));
      float grown = fmaxf(m[r], tile_max[r]);
      float factor = expf(row_shift(m[r]) - row_shift(grown));
      m[r] = grown;
      shift[r] = row_shift(grown);
      l[r] *= factor;
#pragma unroll
      for (int nd = 0; nd < D / 8; ++nd) {
        o[nd][2 * r] *= factor;
        o[nd][2 * r + 1] *= factor;
      }
    }

    // P = exp(S - shift) (dropped), its sums; then O += P V with P rounded to
    // 16 bits and read in place as A tiles, B(k = key, n = d) = V[key][d].
#pragma unroll
    for (int nb = 0; nb < kKeys / 8; ++nb)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float p = expf(sc[nb][i] - shift[i >> 1]);
        l[i >> 1] += p;  // the softmax's sum is of the undropped probabilities
        if (g.dropout_ratio != 0.0f) {
          MmaIndex c = mma_c_index(lane, i);
          p *= attention_dropout_factor<float>(g, b, h, t0 + c.row, s0 + nb * 8 + c.col);
        }
        sc[nb][i] = p;
      }
    c_tiles_times_tile<H, D, kKeys>(sc, vs, lane, o);
  }

  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(kFullMask, l[r], 1);
    l[r] += __shfl_xor_sync(kFullMask, l[r], 2);
  }
  const float inverse_sum[2] = {1.f / l[0], 1.f / l[1]};
  store_c_rows<H, D>(o, inverse_sum, out + (b * g.heads + h) * T * D, t0, T, lane);
  if ((lane & 3) == 0)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      int64_t t = t0 + (lane >> 2) + 8 * r;
      if (t < T) lse[(b * g.heads + h) * T + t] = row_shift(m[r]) + logf(l[r]);
    }
}

template <typename H, int D>
cudaError_t launch_typed(const AttentionGeometry& g, const void* q, const void* k, const void* v, const float* bias,
                         const bool* mask, void* out, float* lse, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>((g.queries + kRows - 1) / kRows), static_cast<unsigned>(g.batch * g.heads));
  flash16_forward<H, D><<<grid, kWarps * 32, 0, stream>>>(g, static_cast<const H*>(q), static_cast<const H*>(k),
                                                         static_cast<const H*>(v), bias, mask, static_cast<H*>(out),
                                                         lse);
  return cudaGetLastError();
}

}  // namespace

int launch_attention_flash16_forward(const AttentionGeometry& g, bool bf16, const void* q, const void* k,
                                     const void* v, const float* bias, const bool* mask, void* out, float* lse,
                                     void* stream) {
  if (!attention_flash16_supports(g) || g.batch * g.heads > 65535 || (g.queries + kRows - 1) / kRows > 2147483647)
    return cudaErrorInvalidValue;
  if (cudaError_t e = require_sm80(); e != cudaSuccess) return e;
  auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    return g.head_size == 64 ? launch_typed<BFloat16, 64>(g, q, k, v, bias, mask, out, lse, s)
                             : launch_typed<BFloat16, 128>(g, q, k, v, bias, mask, out, lse, s);
  return g.head_size == 64 ? launch_typed<Float16, 64>(g, q, k, v, bias, mask, out, lse, s)
                           : launch_typed<Float16, 128>(g, q, k, v, bias, mask, out, lse, s);
}

}  // namespace ort_train
