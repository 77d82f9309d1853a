// One element of ONNX Mod, shared by the CPU and CUDA kernels.
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

}  // namespace ort_train
