#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {

std::optional<ElemType> elem_type(DType t) {
  switch (t) {
    case DType::kFloat: return ElemType::kF32;
    case DType::kDouble: return ElemType::kF64;
    case DType::kInt32: return ElemType::kI32;
    case DType::kInt64: return ElemType::kI64;
    case DType::kBool: return ElemType::kBool;
    default: return std::nullopt;
  }
}

std::optional<ElemType> stored_elem_type(DType t) {
  if (t == DType::kFloat16) return ElemType::kF16;
  if (t == DType::kBFloat16) return ElemType::kBF16;
  return elem_type(t);
}

}  // namespace ort_train::cuda
