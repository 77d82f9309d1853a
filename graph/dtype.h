// Element types, numbered exactly as ONNX's TensorProto.DataType so a value
// read from a file needs no translation table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "numerics/float16.h"  // the 16-bit float storage types and their conversions

namespace ort_train {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

// Bytes per element; 0 for types this runtime does not store (string, sub-byte, complex).
size_t dtype_size(DType t);
std::string dtype_name(DType t);
inline DType dtype_from_onnx(int32_t v) { return static_cast<DType>(v); }
bool dtype_is_float(DType t);    // float, double, float16, bfloat16
bool dtype_is_integer(DType t);  // signed or unsigned integers (not bool)
bool dtype_is_half(DType t);     // float16, bfloat16: stored and converted; arithmetic happens in float
// Reads element i of a float tensor's raw data as a double (float, double, float16, bfloat16).
double float_element(DType t, const void* data, size_t i);

template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kFloat; }
template <> constexpr DType dtype_of<double>() { return DType::kDouble; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<int16_t>() { return DType::kInt16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::kInt8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::kUInt16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::kUInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::kUInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::kBool; }
template <> constexpr DType dtype_of<Float16>() { return DType::kFloat16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::kBFloat16; }

}  // namespace ort_train
