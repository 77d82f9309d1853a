// Transcendental functions over float arrays, vectorized, with the vector
// width chosen at run time: AVX-512, AVX2, or SSE4 (the x86-64-v2 baseline
// the binary is built for). The kernels of Exp, Tanh, Erf, Sigmoid, GELU and
// their gradients call these instead of libm's scalar functions, which cost a
// call per element (and the GELU gradient's double-precision erf and exp were
// most of its time).
//
// The vector bodies are glibc's libmvec (_ZGV*_expf/_tanhf/_erff, within a
// few ulp of the correctly rounded result), picked by the CPU's features once.
// Every element goes through the same vector function, the array's tail
// padded into one more vector, so an element's value depends on its input
// alone, never on where a thread's chunk starts: results do not change with
// the thread count. They may differ in the last ulp between an AVX-512 and an
// AVX2 machine. Off glibc/x86-64 the scalar libm functions are used.
#pragma once
#include <cstdint>

namespace ort_train {

void exp_f32(const float* x, float* y, int64_t n);
void tanh_f32(const float* x, float* y, int64_t n);
void erf_f32(const float* x, float* y, int64_t n);  // x and y may be the same array (all of these)
void sigmoid_f32(const float* x, float* y, int64_t n);
void silu_f32(const float* x, float* y, int64_t n);  // x * sigmoid(x)

// GELU and its derivative, on float: the exact form 0.5x(1 + erf(x/sqrt2)),
// or with `tanh_form` 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
// y = gelu(x + bias[j % bias_n]) when bias is given (x starting at a row of length bias_n), else gelu(x).
void gelu_f32(const float* x, const float* bias, int64_t bias_n, float* y, int64_t n, bool tanh_form);
// dx = dy * gelu'(x + bias), bias as above.
void gelu_grad_f32(const float* dy, const float* x, const float* bias, int64_t bias_n, float* dx, int64_t n,
                   bool tanh_form);

// Which vector body is in use: "avx512", "avx2", "sse4" or "scalar" (for logs and tests).
const char* vector_math_isa();

}  // namespace ort_train
