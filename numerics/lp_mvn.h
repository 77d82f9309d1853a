// The element arithmetic of LpNormalization and MeanVarianceNormalization and
// of their input gradients, given a row's statistics: what the CPU kernels
// (runtime/cpu/kernels/lp_mvn.cc) and the CUDA kernels (cuda_kernels/lp_mvn.cu) run.
//   LpNormalization:  y = x / n,  n = sum |x| (p = 1) or sqrt(sum x^2) (p = 2)
//   MVN:              y = (x - m) / (s + 1e-9),  s = sqrt(E[x^2] - m^2)  (ONNX's function body)
#pragma once
#include <cmath>

#include "numerics/host_device.h"

namespace ort_train {

constexpr double kMvnEpsilon = 1e-9;

// dx_j of LpNormalization: (dy_j - g(x_j) * sum(dy y)) / n, g = sign (p = 1) or y (p = 2).
ORT_HOST_DEVICE double lp_norm_dx(double dy, double x, double norm, double sum_dy_y, int p) {
  const double y = x / norm;
  const double g = p == 1 ? (x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0)) : y;
  return (dy - g * sum_dy_y) / norm;
}

// dx_j of MVN: (dy_j - mean(dy)) / d - (x_j - m) mean(dy (x - m)) / (s d^2), d = s + eps.
ORT_HOST_DEVICE double mvn_dx(double dy, double x, double mean, double stdev, double mean_dy,
                              double mean_dy_centered) {
  const double d = stdev + kMvnEpsilon;
  return (dy - mean_dy) / d - (x - mean) * mean_dy_centered / (stdev * d * d);
}

}  // namespace ort_train
