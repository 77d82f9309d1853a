// Fused multi-tensor optimizer kernels: every parameter of the model in one
// launch (LAMB: three), over a chunk table built once when the optimizer is
// made. The per-element arithmetic is the CPU optimizer's (optimizers/optimizer.cc),
// with the same float coefficients rounded from double on the host.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda_kernels/tensor_map.h"  // ORT_HOST_DEVICE

namespace ort_train::cuda {

constexpr int64_t kOptimizerChunk = 16384;  // elements per chunk (one block each)

// Device arrays describing all parameters; chunks of one parameter are contiguous.
struct MultiTensorTable {
  float* const* params = nullptr;     // [n]
  const float* const* grads = nullptr;  // [n], rewritten every step
  const int64_t* offsets = nullptr;   // [n] start of each parameter in the flat state
  const float* decay = nullptr;       // [n] weight decay of each parameter (0 for no_decay ones)
  const int32_t* chunk_param = nullptr;  // [chunks]
  const int64_t* chunk_begin = nullptr;  // [chunks]
  const int64_t* chunk_end = nullptr;    // [chunks]
  const int32_t* first_chunk = nullptr;  // [n + 1] chunk range of each parameter
  int64_t chunks = 0;
  int64_t params_count = 0;
};

struct SgdArgs {
  float lr, momentum;
  bool first_step;
  float* momentum_buffer;  // null without momentum
};
cudaError_t launch_sgd(const MultiTensorTable& t, const SgdArgs& a, cudaStream_t stream);
// One element: the kernel's arithmetic, also run by the host tests. m is the
// element's momentum buffer (null without momentum); wd the parameter's decay.
ORT_HOST_DEVICE void sgd_element(float& w, float g, float* m, float wd, const SgdArgs& a) {
  float d = g + wd * w;
  if (m) {
    *m = a.first_step ? d : a.momentum * *m + d;
    d = *m;
  }
  w -= a.lr * d;
}

struct AdamArgs {
  float b1, b2, c1, c2, eps, lr;
  float step;          // lr / bc1 (torch) or lr * sqrt(bc2) / bc1 (huggingface)
  float sqrt_bc2;
  bool decoupled;      // AdamW
  bool huggingface;
  float* m;
  float* v;
};
cudaError_t launch_adam(const MultiTensorTable& t, const AdamArgs& a, cudaStream_t stream);
ORT_HOST_DEVICE void adam_element(float& w, float g, float& m, float& v, float wd, const AdamArgs& a) {
  if (a.huggingface) {
    m = a.b1 * m + a.c1 * g;
    v = a.b2 * v + a.c2 * g * g;
    float wk = w - a.step * m / (sqrtf(v) + a.eps);
    w = wk - a.lr * wd * wk;
  } else {
    float d = g + (a.decoupled ? 0.f : wd) * w;
    float wk = w * (a.decoupled ? 1 - a.lr * wd : 1.f);
    m = a.b1 * m + a.c1 * d;
    v = a.b2 * v + a.c2 * d * d;
    w = wk - a.step * m / (sqrtf(v) / a.sqrt_bc2 + a.eps);
  }
}

struct LambArgs {
  float b1, b2, c1, c2;
  double bc1, bc2, eps;
  double lr;
  double ratio_min, ratio_max;  // -inf / +inf when unset
  float* m;
  float* v;
  float* r;                // update direction, flat like m
  double* partials;        // [2 * chunks]: sum w^2, sum r^2 per chunk
  double* ratios;          // [n]
};
cudaError_t launch_lamb(const MultiTensorTable& t, const LambArgs& a, cudaStream_t stream);
// Moments and the update direction r (returned, in double) of one element.
ORT_HOST_DEVICE double lamb_direction(float w, float g, float& m, float& v, double wd, const LambArgs& a) {
  m = a.b1 * m + a.c1 * g;
  v = a.b2 * v + a.c2 * g * g;
  return (m / a.bc1) / (sqrt(v / a.bc2) + a.eps) + wd * w;
}
// The trust ratio from a tensor's sums of squares of w and r.
ORT_HOST_DEVICE double lamb_ratio(double w_sq, double r_sq, const LambArgs& a) {
  double wn = sqrt(w_sq), rn = sqrt(r_sq), ratio = 1.0;
  if (wn > 0 && rn > 0) ratio = wn / rn;
  ratio = fmax(ratio, a.ratio_min);
  return fmin(ratio, a.ratio_max);
}

}  // namespace ort_train::cuda
