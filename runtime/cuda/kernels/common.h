// Host-side helpers shared by the CUDA kernel registrations: element types and
// the index maps of broadcasting.
#pragma once
#include <optional>

#include "cuda_kernels/tensor_map.h"
#include "runtime/cuda/cuda_kernel.h"

namespace ort_train::cuda {

std::optional<ElemType> elem_type(DType t);
// Where output index i of `out` reads `in` (numpy broadcasting, right-aligned).
Result<IndexMap> broadcast_map(const Dims& in, const Dims& out);
// Row-major strides of dims.
Dims row_major_strides(const Dims& dims);

}  // namespace ort_train::cuda
