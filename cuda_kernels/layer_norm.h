// LayerNormalization over the trailing n elements of each row, and its
// gradient (dX per row; dScale/dBias per column, rows summed in order).
// Statistics are computed in double, as on the CPU.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

// scale/bias hold n elements, or 1 (broadcast); bias may be null; mean/inv_std
// (stash type `stats`, float or double) may be null. `simplified`: RMSNorm
// (SimplifiedLayerNormalization), the mean taken as 0.
cudaError_t launch_layer_norm(ElemType t, const void* x, const void* scale, bool scale_scalar, const void* bias,
                              bool bias_scalar, void* y, ElemType stats, void* mean, void* inv_std, int64_t rows,
                              int64_t n, double eps, bool simplified, cudaStream_t stream);
// Rows per chunk of the dScale/dBias partial sums, and the chunks of `rows` rows.
constexpr int64_t kParamChunkRows = 64;
inline int64_t layer_norm_param_chunks(int64_t rows) { return (rows + kParamChunkRows - 1) / kParamChunkRows; }
// dx may be null; dscale/dbias (n elements each) may be null; mean is null
// when `simplified` (RMSNorm's gradient: no mean(g) term). partials: device
// scratch of 2 * layer_norm_param_chunks(rows) * n doubles when dscale or
// dbias is wanted, else may be null.
cudaError_t launch_layer_norm_grad(ElemType t, const void* dy, const void* x, const void* scale, bool scale_scalar,
                                   ElemType stats, const void* mean, const void* inv_std, void* dx, void* dscale,
                                   void* dbias, double* partials, int64_t rows, int64_t n, bool simplified,
                                   cudaStream_t stream);

}  // namespace ort_train::cuda
