// The optimizers' arithmetic per element, written once: the CPU optimizers
// (optimizers/optimizer.cc) loop over it and the GPU kernels
// (cuda_kernels/optimizers.cu) run it per thread, so both compute the same
// float operations in the same order. Each step's coefficients are computed
// in double on the host and rounded to float once
// (optimizers/optimizer_coefficients.h), as PyTorch passes its Python scalars.
//
// grad_scale is the step's one gradient factor: 1/scale of --precision
// fp16's loss scaler, times 1/(ranks x micro-batches), times the clipping
// factor. It is applied where the update reads the gradient, so the
// gradients are read once after the norm (no pass of their own). At 1 the
// product is exact and the update is bit for bit the unscaled one.
#pragma once
#include <cmath>

#include "numerics/host_device.h"

namespace ort_train {

// torch.optim.SGD: d = g + wd w; buf = d (first step) or momentum buf + d; w -= lr buf.
struct SgdStep {
  float lr = 0, momentum = 0, grad_scale = 1;
  bool first_step = true;
};
// m is the element's momentum buffer (null without momentum).
ORT_HOST_DEVICE void sgd_element(float& w, float g, float* m, float wd, const SgdStep& s) {
  float d = g * s.grad_scale + wd * w;
  if (m) {
    *m = s.first_step ? d : s.momentum * *m + d;
    d = *m;
  }
  w -= s.lr * d;
}

// torch.optim.Adam / AdamW, or transformers.AdamW (huggingface).
struct AdamStep {
  float b1 = 0, b2 = 0, c1 = 0, c2 = 0, eps = 0, lr = 0;
  float step = 0;      // lr / bc1 (torch) or lr * sqrt(bc2) / bc1 (huggingface)
  float sqrt_bc2 = 1;  // sqrt(1 - b2^t)
  float grad_scale = 1;
  bool decoupled = false;  // AdamW
  bool huggingface = false;
};
// One parameter's weight decay in torch's form: AdamW scales the weight
// first (decay), Adam adds wd w to the gradient (coupled).
struct AdamDecay {
  float decay = 1, coupled = 0;
};
ORT_HOST_DEVICE AdamDecay adam_decay(const AdamStep& s, float wd) {
  return s.decoupled ? AdamDecay{1 - s.lr * wd, 0.f} : AdamDecay{1.f, wd};
}
// torch's form, branch-free so the CPU loop vectorizes.
ORT_HOST_DEVICE void adam_element(float& w, float g, float& m, float& v, const AdamStep& s, const AdamDecay& p) {
  float d = g * s.grad_scale + p.coupled * w;
  float wk = w * p.decay;
  float mk = s.b1 * m + s.c1 * d;
  float vk = s.b2 * v + s.c2 * d * d;
  m = mk;
  v = vk;
  w = wk - s.step * mk / (sqrtf(vk) / s.sqrt_bc2 + s.eps);
}
// transformers.AdamW: the denominator on the uncorrected v, decay after the update.
ORT_HOST_DEVICE void adam_huggingface_element(float& w, float g, float& m, float& v, float wd, const AdamStep& s) {
  g = g * s.grad_scale;
  m = s.b1 * m + s.c1 * g;
  v = s.b2 * v + s.c2 * g * g;
  float wk = w - s.step * m / (sqrtf(v) + s.eps);
  w = wk - s.lr * wd * wk;
}

// LAMB as ONNX Runtime's LambOptimizer with bias correction:
// r = m^ / (sqrt(v^) + eps) + wd w; w -= lr (||w|| / ||r||) r, norms per tensor.
struct LambStep {
  float b1 = 0, b2 = 0, c1 = 0, c2 = 0, grad_scale = 1;
  double bc1 = 1, bc2 = 1, eps = 0, lr = 0;
  double ratio_min = -INFINITY, ratio_max = INFINITY;  // unset: no bound
};
// Moments and the update direction r (returned, in double) of one element.
ORT_HOST_DEVICE double lamb_direction(float w, float g, float& m, float& v, double wd, const LambStep& s) {
  g = g * s.grad_scale;
  m = s.b1 * m + s.c1 * g;
  v = s.b2 * v + s.c2 * g * g;
  return (m / s.bc1) / (sqrt(v / s.bc2) + s.eps) + wd * w;
}
// The trust ratio from a tensor's sums of squares of w and r.
ORT_HOST_DEVICE double lamb_ratio(double w_sq, double r_sq, const LambStep& s) {
  double wn = sqrt(w_sq), rn = sqrt(r_sq), ratio = 1.0;
  if (wn > 0 && rn > 0) ratio = wn / rn;
  ratio = fmax(ratio, s.ratio_min);
  return fmin(ratio, s.ratio_max);
}

}  // namespace ort_train
