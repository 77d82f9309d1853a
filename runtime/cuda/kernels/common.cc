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

Dims row_major_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * dims[d + 1];
  return s;
}

Result<IndexMap> broadcast_map(const Dims& in, const Dims& out) {
  if (out.size() > static_cast<size_t>(kMaxDims))
    return unsupported("CUDA kernels handle up to {} dimensions, got {}", kMaxDims, out.size());
  IndexMap m;
  m.rank = static_cast<int>(out.size());
  Dims in_strides = row_major_strides(in);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < out.size(); ++d) {
    m.dims[d] = out[d];
    if (d < lead) continue;
    int64_t id = in[d - lead];
    m.strides[d] = id == 1 && out[d] != 1 ? 0 : in_strides[d - lead];
  }
  return m;
}

}  // namespace ort_train::cuda
