// Data movement by index maps: Transpose, Expand, Slice, Tile, Split and
// Pad's interior are gathers (dst[i] = src[map(i)]); Concat, SliceGrad and
// Pad write through a scatter (dst[map(i)] = src[i]). Elements are moved as
// raw bytes of their size (1, 2, 4 or 8).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

// dst has n elements (row-major over map.out_dims); src offset from the map.
cudaError_t launch_gather_copy(const void* src, void* dst, int64_t n, int element_bytes, const CopyMap& map,
                               cudaStream_t stream);
// src has n elements (row-major over map.out_dims, here the source's dims); dst offset from the map.
cudaError_t launch_scatter_copy(const void* src, void* dst, int64_t n, int element_bytes, const CopyMap& map,
                                cudaStream_t stream);

}  // namespace ort_train::cuda
