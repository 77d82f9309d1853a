// Float32 kernels for pooling and the pooling gradients, matching the CPU
// kernels' window walk and summation order. Launchers queue on `stream` and return the launch's
// cudaError_t. Deterministic unless a launcher says otherwise.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ort_train::cuda {

// A pooling window over up to 3 spatial dims. Fewer dims are padded in front
// with unit dims (in = kernel = stride = dilation = out = 1, no pads), which
// keeps row-major offsets and window order unchanged.
struct PoolGeometry {
  int64_t in[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3], out[3];
};

// y (and indices when not null: plane offset + argmax offset in the plane, row-major
// or, with column_major, first spatial dim fastest) for `planes` (image, channel) planes.
cudaError_t launch_max_pool(const float* x, float* y, int64_t* indices, int64_t planes, const PoolGeometry& g,
                            bool column_major, cudaStream_t stream);
cudaError_t launch_average_pool(const float* x, float* y, int64_t planes, const PoolGeometry& g,
                                bool count_include_pad, cudaStream_t stream);
// One value per plane of `size` elements: the mean, or the max.
cudaError_t launch_global_pool(const float* x, float* y, int64_t planes, int64_t size, bool is_max,
                               cudaStream_t stream);
// dx = 0, then dx[indices[i]] += dy[i]. Indices outside their own plane are
// skipped. `deterministic`: one thread per plane adding in dY order; otherwise
// one thread per dY element with atomicAdd (order varies where windows overlap).
cudaError_t launch_max_pool_grad(const float* dy, const int64_t* indices, float* dx, int64_t planes,
                                 int64_t out_plane, int64_t in_plane, bool deterministic, cudaStream_t stream);
// One thread per dx element gathers the shares of the windows covering it, in
// row-major window order (the CPU kernel's order).
cudaError_t launch_average_pool_grad(const float* dy, float* dx, int64_t planes, const PoolGeometry& g,
                                     bool count_include_pad, cudaStream_t stream);

}  // namespace ort_train::cuda
