// com.ort_train Attention (attention_fusion's fused scaled-dot-product
// attention): the geometry both devices share, the per-element arithmetic
// (mask, bias, dropout decision) as host/device functions so the CPU and CUDA
// kernels score and drop identically, and the CUDA launchers. No
// dependencies on the rest of the project.
//
// Layout: Q [B, H, T, D]; K [B, Hk, S, D] or, k_transposed, [B, Hk, D, S];
// V [B, Hk, S, Dv]; O [B, H, T, Dv]; LSE [B, H, T]. Head h reads key/value
// head h / (H / Hk). Bias and mask broadcast to the scores [B, H, T, S]
// through strides (0 on a broadcast dim).
#pragma once
#include <cstdint>

#include "numerics/counter_random.h"
#include "numerics/host_device.h"

namespace ort_train {

struct AttentionGeometry {
  int64_t batch = 0, heads = 0, kv_heads = 0, queries = 0, keys = 0, head_size = 0, value_size = 0;
  bool k_transposed = false;
  double scale = 1.0;
  int64_t bias_stride[4] = {0, 0, 0, 0};  // used when the kernel gets a bias pointer
  int64_t mask_stride[4] = {0, 0, 0, 0};  // used when the kernel gets a mask pointer
  bool mask_fill_when = false;            // the mask value at which a score becomes mask_fill
  double mask_fill = 0.0;
  float dropout_ratio = 0.0f;  // 0: no dropout
  uint64_t seed = 0;
};

// Offset of element [b, h, t, s] of a tensor broadcast to the scores through `stride`.
ORT_HOST_DEVICE int64_t attention_broadcast_offset(const int64_t* stride, int64_t b, int64_t h, int64_t t, int64_t s) {
  return b * stride[0] + h * stride[1] + t * stride[2] + s * stride[3];
}

// Offset of K's element (key s, component d) in key/value head kh of batch b.
ORT_HOST_DEVICE int64_t attention_key_offset(const AttentionGeometry& g, int64_t b, int64_t kh, int64_t s, int64_t d) {
  int64_t head = (b * g.kv_heads + kh) * g.keys * g.head_size;
  return head + (g.k_transposed ? d * g.keys + s : s * g.head_size + d);
}

// Whether the mask fills score [b, h, t, s].
ORT_HOST_DEVICE bool attention_filled(const AttentionGeometry& g, const bool* mask, int64_t b, int64_t h, int64_t t,
                                      int64_t s) {
  return mask && mask[attention_broadcast_offset(g.mask_stride, b, h, t, s)] == g.mask_fill_when;
}

// The score [b, h, t, s] from scale * q.k (`product`): filled where the mask
// says, then the bias added (the order of the Where and Add it replaces).
template <typename T>
ORT_HOST_DEVICE T attention_score(const AttentionGeometry& g, T product, const T* bias, const bool* mask, int64_t b,
                                  int64_t h, int64_t t, int64_t s) {
  T x = attention_filled(g, mask, b, h, t, s) ? static_cast<T>(g.mask_fill) : product;
  if (bias) x += bias[attention_broadcast_offset(g.bias_stride, b, h, t, s)];
  return x;
}

// Dropout's factor for probability [b, h, t, s]: 0 when dropped, 1/(1-ratio)
// when kept, 1 without dropout. The decision is Dropout's counter hash over
// the element's index in the [B, H, T, S] probabilities.
template <typename T>
ORT_HOST_DEVICE T attention_dropout_factor(const AttentionGeometry& g, int64_t b, int64_t h, int64_t t, int64_t s) {
  if (g.dropout_ratio == 0.0f) return T(1);
  uint64_t index = static_cast<uint64_t>(((b * g.heads + h) * g.queries + t) * g.keys + s);
  return counter_uniform(g.seed, index) >= g.dropout_ratio ? static_cast<T>(1.0 / (1.0 - g.dropout_ratio)) : T(0);
}

// CUDA launchers (float32, on `stream`; cudaError_t as int).
// The "cublas" candidate's row kernels (attention_rows.cu; the GEMMs between
// them are cuBLAS's): x and y are [B*H*T, S] blocks of scores.
// Forward: x holds scale * Q K^T, becomes the dropped probabilities; LSE.
int launch_attention_softmax_rows(const AttentionGeometry& g, const float* bias, const bool* mask, float* x,
                                  float* lse, void* stream);
// Backward: x holds scale * Q K^T, becomes the dropped probabilities; y holds
// dO V^T, becomes the score gradient (filled scores zeroed); dscores, when
// not null, the unzeroed score gradient (the bias's).
int launch_attention_grad_rows(const AttentionGeometry& g, const float* bias, const bool* mask, const float* dout,
                               const float* out, const float* lse, float* x, float* y, float* dscores,
                               void* stream);

// The "tiled" candidate (attention.cu): no [T, S] block, one thread block per
// query row, no tensor cores. Forward: O and LSE.
int launch_attention_forward(const AttentionGeometry& g, const float* q, const float* k, const float* v,
                             const float* bias, const bool* mask, float* o, float* lse, void* stream);
// Backward: dQ, dK, dV, and dScores [B, H, T, S] when `dscores` is not null.
// `row_dot` is scratch of B*H*T floats (each row's dO . O).
int launch_attention_backward(const AttentionGeometry& g, const float* dout, const float* q, const float* k,
                              const float* v, const float* o, const float* lse, const float* bias, const bool* mask,
                              float* row_dot, float* dq, float* dk, float* dv, float* dscores, void* stream);

}  // namespace ort_train
