// Host-side helpers shared by the CUDA kernel registrations: element types and
// the index maps (index_maps.h).
#pragma once
#include <optional>

#include "cuda_kernels/tensor_map.h"
#include "runtime/cuda/cuda_kernel.h"
#include "runtime/cuda/kernels/index_maps.h"

namespace ort_train::cuda {

// The element type of the arithmetic kernels (no 16-bit floats: none computes in them yet).
std::optional<ElemType> elem_type(DType t);
// Every element type a CUDA kernel stores, the 16-bit floats included (Cast).
std::optional<ElemType> stored_elem_type(DType t);

// out = X + B for a 1-D B along X's last dim (a Linear layer's bias), the
// float addition an Add node makes; `out` may be X's own buffer. The fused
// ops that take a bias (FusedMatMul, BiasGelu, BiasGeluGrad) add it so.
Status add_bias_into(KernelContext& ctx, const Tensor& x, const Tensor& b, void* out);

}  // namespace ort_train::cuda
