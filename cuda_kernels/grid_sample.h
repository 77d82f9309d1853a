// Float32 CUDA kernels of GridSample and GridSampleGrad (4-D), each grid
// point's taps from numerics/grid_sample.h, the CPU kernels' arithmetic.
// Launchers queue on `stream` and return the launch's cudaError_t.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "numerics/grid_sample.h"

namespace ort_train::cuda {

// y [n, c, points] from x [n, c, H, W] and grid [n, points, 2]; one thread per grid point.
cudaError_t launch_grid_sample(const float* x, const float* grid, float* y, int64_t n, int64_t c, int64_t points,
                               const GridSampleParams& p, cudaStream_t stream);
// dgrid (when not null): one thread per point, channels in order. dx (when
// not null) is zeroed, then: `deterministic`, one thread per (image, channel)
// plane adding its points in order; otherwise one thread per point with
// atomicAdd (the order varies where points share a tap).
cudaError_t launch_grid_sample_grad(const float* dy, const float* x, const float* grid, float* dx, float* dgrid,
                                    int64_t n, int64_t c, int64_t points, const GridSampleParams& p,
                                    bool deterministic, cudaStream_t stream);

}  // namespace ort_train::cuda
