// Whether a number read from a description (a double) is a value an integer
// dtype holds: a whole number in its range. A cast of 1e300 or NaN to int64
// is undefined behaviour, so every description number that becomes an
// integer tensor's value is checked here first (token fills, synthetic ranges).
#pragma once
#include <cmath>

#include "graph/tensor.h"

namespace ort_train {

inline bool holds_whole_number(DType dtype, double v) {
  const double lo = dtype == DType::kInt32 ? -2147483648.0 : -9223372036854775808.0;
  const double hi = dtype == DType::kInt32 ? 2147483647.0 : 9223372036854774784.0;  // int64: the last double below 2^63
  return v == std::floor(v) && v >= lo && v <= hi;
}

}  // namespace ort_train
