// float32 <-> bfloat16 over arrays, written so GCC vectorizes them (integer
// shifts and a select; the element type's own conversion has a NaN branch the
// vectorizer does not take): autocast's Casts of every GEMM operand and result
// and the trainer's gradient and weight copies. Same bits as BFloat16(float)
// and float(BFloat16): round to nearest even, NaN kept quiet with its sign.
#pragma once
#include <cstdint>

#include "graph/dtype.h"
#include "graph/tensor.h"

namespace ort_train {

void float_to_bfloat16(const float* src, BFloat16* dst, int64_t n);
void bfloat16_to_float(const BFloat16* src, float* dst, int64_t n);
// The same over the OpenMP pool (whole tensors: Cast, the vector ops' convert).
void parallel_float_to_bfloat16(const float* src, BFloat16* dst, int64_t n);
void parallel_bfloat16_to_float(const BFloat16* src, float* dst, int64_t n);

// A float16 or bfloat16 tensor `h` into float32 `f` of its size, and back
// (rounded to nearest even), over the pool: the 16-bit CPU kernels that
// compute in float32 (runtime/cpu/kernels/half_twins.cc, attention_gemm.cc).
void widen_half(const Tensor& h, Tensor& f);
void narrow_to_half(const Tensor& f, Tensor& h);
// Rounds n float32 values in place to the nearest `half` value (kFloat16 or
// kBFloat16): what a 16-bit GEMM reads of a float32 block.
void round_to_half(DType half, float* x, int64_t n);

}  // namespace ort_train
