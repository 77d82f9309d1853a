// IsNaN's and IsInf's test of one element, shared by the CPU and CUDA kernels.
#pragma once
#include "numerics/host_device.h"

namespace ort_train {

template <typename T>
ORT_HOST_DEVICE bool float_class_test(T v, bool nan, bool negative_inf, bool positive_inf) {
  if (nan) return v != v;
  const bool inf = v == v && (v - v) != (v - v);  // inf - inf is NaN; finite values give 0
  return inf && ((v < T(0)) ? negative_inf : positive_inf);
}

}  // namespace ort_train
