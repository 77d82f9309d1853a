// One element of ONNX Mod, and of Div on integers, shared by the CPU and CUDA kernels.
//   fmod = 0: the remainder takes the divisor's sign (Python's %, numpy.mod,
//             torch.remainder); integers only, as the ONNX spec says.
//   fmod = 1: the remainder takes the dividend's sign (C's fmod, torch.fmod).
// An integer divisor of zero gives 0 (ONNX leaves it undefined; Div does the same).
#pragma once
#include <cmath>
#include <type_traits>

#include "numerics/host_device.h"

namespace ort_train {

template <typename T>
ORT_HOST_DEVICE T mod_value(T a, T b, bool c_fmod) {
  if constexpr (std::is_floating_point<T>::value) {
#ifndef __CUDA_ARCH__
    using std::fmod;
#endif
    T r = static_cast<T>(fmod(a, b));
    if (!c_fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
    return r;
  } else {
    if (b == T(0)) return T(0);
    if constexpr (std::is_signed<T>::value) {
      // -1 divides everything; the lowest value % -1 would overflow in C++.
      if (b == T(-1)) return T(0);
    }
    T r = static_cast<T>(a % b);
    if constexpr (std::is_signed<T>::value) {
      if (!c_fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
    }
    return r;
  }
}

// a / b. Integers: a zero divisor gives 0 (as Mod's), and the lowest value
// divided by -1 wraps to itself as numpy's does, where C++ would trap (SIGFPE
// on x86, even for constants folded while a model loads).
template <typename T>
ORT_HOST_DEVICE T div_value(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) {
    return a / b;
  } else {
    if (b == T(0)) return T(0);
    if constexpr (std::is_signed<T>::value) {
      using U = std::make_unsigned_t<T>;
      if (b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));  // two's-complement negation, no overflow
    }
    return static_cast<T>(a / b);
  }
}

}  // namespace ort_train
