// One element of ONNX Cast, shared by the CPU kernel and the CUDA kernel so
// both convert identically (the host tests check it). Float -> integer
// saturates and maps NaN to 0 (C++ leaves both undefined); the 16-bit floats
// go through float: a float16/bfloat16 source is widened first, a 16-bit
// target is rounded to nearest even from the float value. Double -> float16
// therefore rounds twice, which can differ from one rounding in the last bit
// of an exact tie.
#pragma once
#include <limits>
#include <type_traits>

#include "numerics/float16.h"
#include "numerics/host_device.h"

namespace ort_train {

template <typename T>
constexpr bool is_half_type = std::is_same<T, Float16>::value || std::is_same<T, BFloat16>::value;

template <typename From, typename To>
ORT_HOST_DEVICE To cast_value(From v) {
  if constexpr (is_half_type<From>) {
    return cast_value<float, To>(static_cast<float>(v));
  } else if constexpr (is_half_type<To>) {
    if constexpr (std::is_same<From, bool>::value) return To(v ? 1.f : 0.f);
    else return To(static_cast<float>(v));
  } else if constexpr (std::is_same<To, bool>::value) {
    return v != From(0);
  } else if constexpr (std::is_floating_point<From>::value && std::is_integral<To>::value) {
    double d = static_cast<double>(v);
    if (d != d) return To(0);
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ort_train
