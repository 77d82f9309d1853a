// CUDA kernels of OneHot, EyeLike, Hardmax and ReverseSequence (Compress is a
// Gather of the condition's true positions: cuda_kernels/gather.cu). Index
// arithmetic from numerics/index_ops.h and numerics/arg_reduce.h, the CPU's own.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

// out [outer, depth, inner] = off, then on at each in-range index of [outer, inner] (int64 indices).
cudaError_t launch_one_hot(int element_bytes, const int64_t* indices, int64_t outer, int64_t depth, int64_t inner,
                           const void* off_on_host, void* out, cudaStream_t stream);
// out [rows, cols] = 1 on the k-th diagonal, else 0 (t: any arithmetic element type).
cudaError_t launch_eye_like(ElemType t, int64_t rows, int64_t cols, int64_t k, void* out, cudaStream_t stream);
// out = 1 at the first maximum of each [outer, n, inner] row, else 0.
cudaError_t launch_hardmax(ElemType t, const void* x, void* out, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t stream);
// ReverseSequence over [d0, d1, inner] (batch-major: d0 the batch), lens device int64 [batch].
cudaError_t launch_reverse_sequence(int element_bytes, const void* x, void* out, int64_t d0, int64_t d1, int64_t inner,
                                    bool batch_major, const int64_t* lens, cudaStream_t stream);

}  // namespace ort_train::cuda
