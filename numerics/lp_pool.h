// The element arithmetic of LpPool and GlobalLpPool, y = (sum over the window
// of |x|^p)^(1/p), with padding contributing nothing: what the CPU kernels
// (runtime/cpu/kernels/pooling.cc) and the CUDA kernels (cuda_kernels/pooling.cu)
// both run. p is an integer >= 1 (ONNX's attribute from opset 2); 1 and 2
// take exact paths so that those norms match a plain sum and sqrt.
#pragma once
#include <cmath>

#include "numerics/host_device.h"

namespace ort_train {

// |x|^p, one window element's term.
template <typename T>
ORT_HOST_DEVICE T lp_pool_term(T x, int64_t p) {
  T a = x < T(0) ? -x : x;
  if (p == 1) return a;
  if (p == 2) return x * x;
  return static_cast<T>(pow(static_cast<double>(a), static_cast<double>(p)));
}

// sum^(1/p): the pooled value of a window whose terms add to `sum`.
template <typename T>
ORT_HOST_DEVICE T lp_pool_root(T sum, int64_t p) {
  if (p == 1) return sum;
  if (p == 2) return static_cast<T>(sqrt(static_cast<double>(sum)));
  return static_cast<T>(pow(static_cast<double>(sum), 1.0 / static_cast<double>(p)));
}

}  // namespace ort_train
