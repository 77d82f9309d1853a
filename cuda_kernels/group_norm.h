// CUDA kernels of InstanceNormalization/GroupNormalization and GroupNormGrad:
// one block per row (n, group), statistics in double with a fixed reduction
// order (block_sum), element arithmetic from numerics/group_norm.h.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

struct GroupNormShape {
  int64_t rows = 0, groups = 1, row_size = 0, spatial = 1, channels_per_group = 1, affine = 0;
  bool affine_per_group = false;
  double epsilon = 1e-5;
};

cudaError_t launch_group_norm(ElemType t, const GroupNormShape& g, const void* x, const void* scale, const void* bias,
                              void* y, cudaStream_t stream);
// dx (may be null) per row; dscale_rows/dbias_rows [rows, affine] (double) per-row partial
// sums, which launch_sum_rows then adds in row order into dscale/dbias (either may be null).
cudaError_t launch_group_norm_grad(ElemType t, const GroupNormShape& g, const void* dy, const void* x,
                                   const void* scale, void* dx, double* dscale_rows, double* dbias_rows,
                                   cudaStream_t stream);
cudaError_t launch_sum_rows(ElemType t, const double* rows_by_affine, int64_t rows, int64_t affine, void* out,
                            cudaStream_t stream);

}  // namespace ort_train::cuda
