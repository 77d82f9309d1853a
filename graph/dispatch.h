// Calls a templated lambda with the C++ type of a runtime dtype:
//   dispatch_float(t, [&]<typename T>() { ... });
// Each returns false when the dtype is not in the set, so the caller can report it.
#pragma once
#include <cstdint>

#include "graph/dtype.h"

namespace ort_train {

template <typename F>
bool dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::kFloat: f.template operator()<float>(); return true;
    case DType::kDouble: f.template operator()<double>(); return true;
    default: return false;
  }
}

template <typename F>
bool dispatch_integer(DType t, F&& f) {
  switch (t) {
    case DType::kInt64: f.template operator()<int64_t>(); return true;
    case DType::kInt32: f.template operator()<int32_t>(); return true;
    case DType::kInt16: f.template operator()<int16_t>(); return true;
    case DType::kInt8: f.template operator()<int8_t>(); return true;
    case DType::kUInt8: f.template operator()<uint8_t>(); return true;
    case DType::kUInt16: f.template operator()<uint16_t>(); return true;
    case DType::kUInt32: f.template operator()<uint32_t>(); return true;
    case DType::kUInt64: f.template operator()<uint64_t>(); return true;
    default: return false;
  }
}

// Float and integer types (the numeric types arithmetic kernels accept).
template <typename F>
bool dispatch_numeric(DType t, F&& f) {
  return dispatch_float(t, f) || dispatch_integer(t, f);
}

// The 16-bit float storage types. Kernels convert them to float to compute.
template <typename F>
bool dispatch_half(DType t, F&& f) {
  switch (t) {
    case DType::kFloat16: f.template operator()<Float16>(); return true;
    case DType::kBFloat16: f.template operator()<BFloat16>(); return true;
    default: return false;
  }
}

// Every type the runtime computes in, bool included (copies, gathers, reshapes).
template <typename F>
bool dispatch_all(DType t, F&& f) {
  if (t == DType::kBool) {
    f.template operator()<bool>();
    return true;
  }
  return dispatch_numeric(t, f);
}

// Every type the runtime stores: dispatch_all plus the 16-bit floats (Cast).
template <typename F>
bool dispatch_stored(DType t, F&& f) {
  return dispatch_all(t, f) || dispatch_half(t, f);
}

}  // namespace ort_train
