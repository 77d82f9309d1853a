// CUDA kernels of com.ort_train Attention and AttentionGrad (float32). Like
// the CPU kernels they keep no [B, H, T, S] probabilities between forward and
// backward: only each row's log-sum-exp. The scoring, masking and dropout
// decisions are cuda_kernels/attention.h's, shared with the CPU.
//   forward:        one block per query row; the row's scores in shared memory.
//   backward rows:  one block per query row: dQ, the row's dO . O, dScores.
//   backward keys:  one block per key of a key/value head: dK and dV summed
//                   over the group's heads and the queries in a fixed order
//                   (no atomics, so runs repeat bit for bit).
// Rows of more than kMaxKeys keys are refused (shared memory).
#include <cmath>

#include "cuda_kernels/attention.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train {
namespace {

using cuda::block_max;
using cuda::block_sum;
using cuda::kThreads;

constexpr int64_t kMaxKeys = 8192;

// Bytes of a row's scores in shared memory, rounded up to whole groups of four
// floats. The P.V and dS.K loops read the scores four at a time and then the
// remainder; on an H100 compute-sanitizer saw a 12-byte read starting at the
// last of 5 keys, i.e. the remainder read as one wide load. The padding keeps
// such a read inside the block's allocation (its values are never used).
size_t row_scores_bytes(int64_t keys) { return static_cast<size_t>((keys + 3) / 4 * 4) * sizeof(float); }

__device__ float key_dot(const AttentionGeometry& g, const float* qrow, const float* k, int64_t b, int64_t kh,
                         int64_t s) {
  float dot = 0;
  for (int64_t d = 0; d < g.head_size; ++d) dot += qrow[d] * k[attention_key_offset(g, b, kh, s, d)];
  return dot;
}

__global__ void attention_forward_rows(AttentionGeometry g, const float* q, const float* k, const float* v,
                                       const float* bias, const bool* mask, float* o, float* lse) {
  extern __shared__ float probs[];
  __shared__ float buf[kThreads];
  int64_t row = blockIdx.x;  // (b, h, t)
  int64_t t = row % g.queries, h = (row / g.queries) % g.heads, b = row / (g.queries * g.heads);
  int64_t kh = h / (g.heads / g.kv_heads);
  const float* qrow = q + row * g.head_size;
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < g.keys; s += kThreads) {
    float x = attention_score<float>(g, static_cast<float>(g.scale) * key_dot(g, qrow, k, b, kh, s), bias, mask, b,
                                     h, t, s);
    probs[s] = x;
    mx = fmaxf(mx, x);
  }
  mx = block_max(mx, buf);
  float shift = isinf(mx) ? 0.f : mx;
  float sum = 0;
  for (int64_t s = threadIdx.x; s < g.keys; s += kThreads) {
    float p = expf(probs[s] - shift);
    sum += p;
    probs[s] = p * attention_dropout_factor<float>(g, b, h, t, s);
  }
  sum = block_sum(sum, buf);
  __syncthreads();
  const float* vhead = v + (b * g.kv_heads + kh) * g.keys * g.value_size;
  for (int64_t e = threadIdx.x; e < g.value_size; e += kThreads) {
    float acc = 0;
    for (int64_t s = 0; s < g.keys; ++s) acc += probs[s] * vhead[s * g.value_size + e];
    o[row * g.value_size + e] = acc / sum;
  }
  if (threadIdx.x == 0) lse[row] = shift + logf(sum);
}

// dQ of one query row, its dO . O (row_dot), and the row's dScores when asked.
__global__ void attention_backward_rows(AttentionGeometry g, const float* dout, const float* q, const float* k,
                                        const float* v, const float* o, const float* lse, const float* bias,
                                        const bool* mask, float* row_dot, float* dq, float* dscores) {
  extern __shared__ float dscore[];
  __shared__ float buf[kThreads];
  int64_t row = blockIdx.x;
  int64_t t = row % g.queries, h = (row / g.queries) % g.heads, b = row / (g.queries * g.heads);
  int64_t kh = h / (g.heads / g.kv_heads);
  const float* qrow = q + row * g.head_size;
  const float* dorow = dout + row * g.value_size;
  float dot = 0;
  for (int64_t e = threadIdx.x; e < g.value_size; e += kThreads) dot += dorow[e] * o[row * g.value_size + e];
  dot = block_sum(dot, buf);
  const float* vhead = v + (b * g.kv_heads + kh) * g.keys * g.value_size;
  for (int64_t s = threadIdx.x; s < g.keys; s += kThreads) {
    float x = attention_score<float>(g, static_cast<float>(g.scale) * key_dot(g, qrow, k, b, kh, s), bias, mask, b,
                                     h, t, s);
    float p = isinf(lse[row]) ? 0.f : expf(x - lse[row]);
    float dp = 0;
    for (int64_t e = 0; e < g.value_size; ++e) dp += dorow[e] * vhead[s * g.value_size + e];
    float ds = p * (dp * attention_dropout_factor<float>(g, b, h, t, s) - dot);
    if (dscores) dscores[row * g.keys + s] = ds;
    dscore[s] = attention_filled(g, mask, b, h, t, s) ? 0.f : ds;
  }
  __syncthreads();
  for (int64_t d = threadIdx.x; d < g.head_size; d += kThreads) {
    float acc = 0;
    for (int64_t s = 0; s < g.keys; ++s) acc += dscore[s] * k[attention_key_offset(g, b, kh, s, d)];
    dq[row * g.head_size + d] = static_cast<float>(g.scale) * acc;
  }
  if (threadIdx.x == 0) row_dot[row] = dot;
}

// dK and dV of key s of key/value head (b, kh): over the group's heads and all
// queries, kThreads queries at a time (each thread scores one, then the
// block sums the chunk into every component in query order).
__global__ void attention_backward_keys(AttentionGeometry g, const float* dout, const float* q, const float* k,
                                        const float* v, const float* lse, const float* bias, const bool* mask,
                                        const float* row_dot, float* dk, float* dv) {
  __shared__ float weight[kThreads];  // dropped probability: dV's weight of dO_t
  __shared__ float dsc[kThreads];     // dScore: dK's weight of Q_t
  int64_t s = blockIdx.x % g.keys, kh = (blockIdx.x / g.keys) % g.kv_heads, b = blockIdx.x / (g.keys * g.kv_heads);
  int64_t group = g.heads / g.kv_heads;
  const float* vrow = v + ((b * g.kv_heads + kh) * g.keys + s) * g.value_size;
  // Each thread owns components threadIdx.x, + kThreads, ... of dK and dV; at most 4 each.
  float dk_acc[4] = {0, 0, 0, 0}, dv_acc[4] = {0, 0, 0, 0};
  for (int64_t h = kh * group; h < (kh + 1) * group; ++h) {
    for (int64_t t0 = 0; t0 < g.queries; t0 += kThreads) {
      int64_t t = t0 + threadIdx.x;
      float w = 0, ds = 0;
      if (t < g.queries) {
        int64_t row = (b * g.heads + h) * g.queries + t;
        const float* qrow = q + row * g.head_size;
        float x = attention_score<float>(g, static_cast<float>(g.scale) * key_dot(g, qrow, k, b, kh, s), bias, mask,
                                         b, h, t, s);
        float p = isinf(lse[row]) ? 0.f : expf(x - lse[row]);
        float factor = attention_dropout_factor<float>(g, b, h, t, s);
        float dp = 0;
        for (int64_t e = 0; e < g.value_size; ++e) dp += dout[row * g.value_size + e] * vrow[e];
        w = p * factor;
        ds = attention_filled(g, mask, b, h, t, s) ? 0.f : p * (dp * factor - row_dot[row]);
      }
      weight[threadIdx.x] = w;
      dsc[threadIdx.x] = ds;
      __syncthreads();
      int64_t n = g.queries - t0 < kThreads ? g.queries - t0 : kThreads;
      for (int c = 0; c < 4; ++c) {
        int64_t e = threadIdx.x + c * kThreads;
        for (int64_t i = 0; i < n; ++i) {
          int64_t row = (b * g.heads + h) * g.queries + t0 + i;
          if (e < g.value_size) dv_acc[c] += weight[i] * dout[row * g.value_size + e];
          if (e < g.head_size) dk_acc[c] += dsc[i] * q[row * g.head_size + e];
        }
      }
      __syncthreads();
    }
  }
  for (int c = 0; c < 4; ++c) {
    int64_t e = threadIdx.x + c * kThreads;
    if (e < g.value_size) dv[((b * g.kv_heads + kh) * g.keys + s) * g.value_size + e] = dv_acc[c];
    if (e < g.head_size) dk[attention_key_offset(g, b, kh, s, e)] = static_cast<float>(g.scale) * dk_acc[c];
  }
}

}  // namespace

int launch_attention_forward(const AttentionGeometry& g, const float* q, const float* k, const float* v,
                             const float* bias, const bool* mask, float* o, float* lse, void* stream) {
  int64_t rows = g.batch * g.heads * g.queries;
  if (rows == 0) return cudaSuccess;
  if (g.keys > kMaxKeys) return cudaErrorInvalidValue;
  size_t shared = row_scores_bytes(g.keys);
  attention_forward_rows<<<static_cast<unsigned>(rows), kThreads, shared, static_cast<cudaStream_t>(stream)>>>(
      g, q, k, v, bias, mask, o, lse);
  return cudaGetLastError();
}

int launch_attention_backward(const AttentionGeometry& g, const float* dout, const float* q, const float* k,
                              const float* v, const float* o, const float* lse, const float* bias, const bool* mask,
                              float* row_dot, float* dq, float* dk, float* dv, float* dscores, void* stream) {
  int64_t rows = g.batch * g.heads * g.queries;
  if (rows == 0) return cudaSuccess;
  if (g.keys > kMaxKeys || g.head_size > 4 * kThreads || g.value_size > 4 * kThreads) return cudaErrorInvalidValue;
  auto s = static_cast<cudaStream_t>(stream);
  size_t shared = row_scores_bytes(g.keys);
  attention_backward_rows<<<static_cast<unsigned>(rows), kThreads, shared, s>>>(g, dout, q, k, v, o, lse, bias, mask,
                                                                               row_dot, dq, dscores);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  int64_t keys = g.batch * g.kv_heads * g.keys;
  if (keys == 0) return cudaSuccess;
  attention_backward_keys<<<static_cast<unsigned>(keys), kThreads, 0, s>>>(g, dout, q, k, v, lse, bias, mask, row_dot,
                                                                          dk, dv);
  return cudaGetLastError();
}

}  // namespace ort_train
