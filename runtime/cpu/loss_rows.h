// The float32 rows of the softmax cross-entropy over contiguous classes: a
// language model's vocabulary, 31M logits a step in the BERT-style benchmark,
// each read and written by the loss and by its gradient. Built for the CPU's
// widest vectors (simd_clones.h); a row's values do not depend on the clone.
#pragma once
#include <cstdint>

namespace ort_train {

// log_prob[c] = x[c] - log(sum of exp(x)), stable (the row's max subtracted
// inside), with fast_exp and the sum in double over eight interleaved lanes.
void log_softmax_row_f32(const float* x, float* log_prob, int64_t n);

// out[c] = g * exp(log_prob[c]): the gradient's row before its target's -g.
void scaled_exp_row_f32(const float* log_prob, float g, float* out, int64_t n);

}  // namespace ort_train
