// float32 <-> bfloat16 over arrays, written so GCC vectorizes them (integer
// shifts and a select; the element type's own conversion has a NaN branch the
// vectorizer does not take): autocast's Casts of every GEMM operand and result
// and the trainer's gradient and weight copies. Same bits as BFloat16(float)
// and float(BFloat16): round to nearest even, NaN kept quiet with its sign.
#pragma once
#include <cstdint>

#include "graph/dtype.h"

namespace ort_train {

void float_to_bfloat16(const float* src, BFloat16* dst, int64_t n);
void bfloat16_to_float(const BFloat16* src, float* dst, int64_t n);
// The same over the OpenMP pool (whole tensors: Cast, the vector ops' convert).
void parallel_float_to_bfloat16(const float* src, BFloat16* dst, int64_t n);
void parallel_bfloat16_to_float(const BFloat16* src, float* dst, int64_t n);

}  // namespace ort_train
