// Trilu (keep the upper or lower triangle of the last two dims) and CumSum
// (inclusive or exclusive, forward or reverse, along one axis).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

// x viewed as [batch, rows, cols]; elements outside the kept triangle are zero.
cudaError_t launch_trilu(const void* x, void* y, int element_bytes, int64_t batch, int64_t rows, int64_t cols,
                         int64_t k, bool upper, cudaStream_t stream);
// x viewed as [outer, n, inner], scanned along n; one thread per line, in order.
cudaError_t launch_cumsum(ElemType t, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                          bool reverse, cudaStream_t stream);

}  // namespace ort_train::cuda
