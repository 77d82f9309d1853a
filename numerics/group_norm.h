// One element of InstanceNormalization/GroupNormalization and of its input
// gradient, given its row's statistics: the arithmetic of the CPU kernels
// (runtime/cpu/kernels/group_norm.cc) and the CUDA kernels (cuda_kernels/group_norm.cu).
#pragma once
#include <cmath>

#include "numerics/host_device.h"

namespace ort_train {

// 1 / sqrt(biased variance + epsilon).
ORT_HOST_DEVICE double group_norm_rstd(double variance, double epsilon) {
#ifndef __CUDA_ARCH__
  using std::sqrt;
#endif
  return 1.0 / sqrt(variance + epsilon);
}

template <typename T>
ORT_HOST_DEVICE T group_norm_value(T x, double mean, double rstd, T scale, T bias) {
  return static_cast<T>((static_cast<double>(x) - mean) * rstd) * scale + bias;
}

// dX of one element: rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)),
// with dxhat = dY * scale and the means over its row.
ORT_HOST_DEVICE double group_norm_dx(double dxhat, double xhat, double rstd, double mean_dxhat,
                                     double mean_dxhat_xhat) {
  return rstd * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
}

}  // namespace ort_train
