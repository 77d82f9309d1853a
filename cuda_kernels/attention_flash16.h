// The "flash" candidate of 16-bit com.ort_train Attention and AttentionGrad
// on the GPU: FlashAttention-2's forward and backward on tensor cores (mma.sync m16n8k16, bfloat16 or
// float16 operands, float32 accumulation): one block per 64 query rows of a
// (batch, head), four warps of 16 rows each, key/value tiles of 64 in shared
// memory, an online softmax in float32 registers; no [T, S] block of scores
// exists. The probabilities are rounded to 16 bits for the product with V
// before they are normalized (FlashAttention's rounding; the cublas
// candidate rounds them after), so the two differ within 16-bit rounding.
//
// It enters only through the measured choice (runtime/kernel_choice.h), which
// drops it where it is slower than the cublas candidate or disagrees with it.
// Never run on a GPU yet (written without one); its tile maps are host-tested
// (cuda_kernels/mma_fragments.h).
#pragma once
#include "cuda_kernels/attention.h"

namespace ort_train {

// Whether the kernel takes this attention: head and value size 64 or 128 and
// equal, K not transposed, an sm_80 or later GPU (checked by the launcher: it
// returns cudaErrorInvalidDeviceFunction on older cards). Dropout, masks and
// biases are the shared element functions of attention.h.
ORT_HOST_DEVICE bool attention_flash16_supports(const AttentionGeometry& g) {
  return (g.head_size == 64 || g.head_size == 128) && g.value_size == g.head_size && !g.k_transposed &&
         g.queries > 0 && g.keys > 0 && g.batch > 0 && g.heads > 0;
}

// O (16-bit, [B, H, T, D]) and LSE (float32) from 16-bit Q, K, V; bias
// (float32) and mask may be null. `bf16`: bfloat16, else float16. Returns a
// cudaError_t as int (cudaErrorInvalidValue when the geometry is not supported).
// The backward candidate takes head and value size 64 only (its tiles fill
// the 48 KB of static shared memory at 64).
ORT_HOST_DEVICE bool attention_flash16_backward_supports(const AttentionGeometry& g) {
  return attention_flash16_supports(g) && g.head_size == 64;
}

int launch_attention_flash16_forward(const AttentionGeometry& g, bool bf16, const void* q, const void* k,
                                     const void* v, const float* bias, const bool* mask, void* out, float* lse,
                                     void* stream);

// FlashAttention-2's backward on tensor cores: one block per 64 keys of a
// (batch, key/value head), four warps of 16 keys, looping over the group's
// heads and the queries in tiles of 64; P recomputed from the LSE; dK and dV
// summed in registers (deterministic), dQ added with float32 atomics into
// `dq32` ([B, H, T, D] float32, zeroed by the launcher) and rounded into `dq`
// afterwards. The same rounding points as the cublas candidate: P (dropped)
// and the score gradient rounded to 16 bits for the products that read them.
// `dscores` (float32 [B, H, T, S], may be null) gets the unzeroed score
// gradient. Atomics: not deterministic.
int launch_attention_flash16_backward(const AttentionGeometry& g, bool bf16, const void* dout, const void* q,
                                      const void* k, const void* v, const void* out, const float* lse,
                                      const float* bias, const bool* mask, float* dq32, void* dq, void* dk, void* dv,
                                      float* dscores, void* stream);

}  // namespace ort_train
