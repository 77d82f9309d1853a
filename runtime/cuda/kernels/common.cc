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

}  // namespace ort_train::cuda
