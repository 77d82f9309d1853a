#include "optimizers/optimizer_coefficients.h"

#include <cmath>
#include <limits>

namespace ort_train {

SgdStep sgd_step(const OptimizerSettings& s, int64_t t, double lr, float grad_scale) {
  return SgdStep{static_cast<float>(lr), static_cast<float>(s.momentum), grad_scale, t == 1};
}

// 1 - 0.999 computed in float would differ from PyTorch's by 5e-5 relative:
// every coefficient comes from double.
AdamStep adam_step(const OptimizerSettings& s, int64_t t, double lr, float grad_scale) {
  const double b1 = s.beta1, b2 = s.beta2;
  const double bc1 = 1 - std::pow(b1, static_cast<double>(t)), bc2 = 1 - std::pow(b2, static_cast<double>(t));
  AdamStep a;
  a.b1 = static_cast<float>(b1);
  a.b2 = static_cast<float>(b2);
  a.c1 = static_cast<float>(1 - b1);
  a.c2 = static_cast<float>(1 - b2);
  a.eps = static_cast<float>(s.eps);
  a.lr = static_cast<float>(lr);
  a.huggingface = s.huggingface;
  a.decoupled = s.name == "AdamW";
  a.step = static_cast<float>(s.huggingface ? lr * std::sqrt(bc2) / bc1 : lr / bc1);
  a.sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
  a.grad_scale = grad_scale;
  return a;
}

LambStep lamb_step(const OptimizerSettings& s, int64_t t, double lr, float grad_scale) {
  LambStep a;
  a.b1 = static_cast<float>(s.beta1);
  a.b2 = static_cast<float>(s.beta2);
  a.c1 = static_cast<float>(1 - s.beta1);
  a.c2 = static_cast<float>(1 - s.beta2);
  a.bc1 = 1 - std::pow(s.beta1, static_cast<double>(t));
  a.bc2 = 1 - std::pow(s.beta2, static_cast<double>(t));
  a.eps = s.eps;
  a.lr = lr;
  a.grad_scale = grad_scale;
  a.ratio_min = s.ratio_min.value_or(-std::numeric_limits<double>::infinity());
  a.ratio_max = s.ratio_max.value_or(std::numeric_limits<double>::infinity());
  return a;
}

}  // namespace ort_train
