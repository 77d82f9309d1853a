#include "graph/dtype.h"

namespace ort_train {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat: case DType::kInt32: case DType::kUInt32: return 4;
    case DType::kDouble: case DType::kInt64: case DType::kUInt64: return 8;
    case DType::kUInt8: case DType::kInt8: case DType::kBool: return 1;
    case DType::kUInt16: case DType::kInt16: case DType::kFloat16: case DType::kBFloat16: return 2;
    default: return 0;
  }
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kUndefined: return "undefined";
    case DType::kFloat: return "float32";
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kUInt16: return "uint16";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "float16";
    case DType::kDouble: return "float64";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kComplex64: return "complex64";
    case DType::kComplex128: return "complex128";
    case DType::kBFloat16: return "bfloat16";
  }
  return "dtype(" + std::to_string(static_cast<int>(t)) + ")";
}

bool dtype_is_float(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16;
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::kUInt8: case DType::kInt8: case DType::kUInt16: case DType::kInt16:
    case DType::kInt32: case DType::kInt64: case DType::kUInt32: case DType::kUInt64: return true;
    default: return false;
  }
}

bool dtype_is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

double float_element(DType t, const void* data, size_t i) {
  switch (t) {
    case DType::kFloat: return static_cast<const float*>(data)[i];
    case DType::kDouble: return static_cast<const double*>(data)[i];
    case DType::kFloat16: return static_cast<float>(static_cast<const Float16*>(data)[i]);
    case DType::kBFloat16: return static_cast<float>(static_cast<const BFloat16*>(data)[i]);
    default: return 0.0;  // callers check dtype_is_float first
  }
}

}  // namespace ort_train
