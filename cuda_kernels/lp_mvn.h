// CUDA kernels of LpNormalization and MeanVarianceNormalization and their
// gradients: one thread per row of graph/ops/lp_mvn.h's tables (device
// copies), sums in double in the CPU's order, numerics/lp_mvn.h's arithmetic.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

// dy null: the forward (y = out); else the gradient (dx = out).
cudaError_t launch_lp_mvn(ElemType t, bool mvn, int p, const int64_t* base, int64_t rows, const int64_t* row,
                          int64_t row_size, const void* x, const void* dy, void* out, cudaStream_t stream);

}  // namespace ort_train::cuda
