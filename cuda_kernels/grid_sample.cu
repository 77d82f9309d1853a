#include "cuda_kernels/grid_sample.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{gridDim.x} * blockDim.x)

__global__ void grid_sample_kernel(const float* x, const float* grid, float* y, int64_t n, int64_t c, int64_t points,
                                   GridSampleParams p) {
  const int64_t plane = p.height * p.width;
  GRID_STRIDE(q, n * points) {
    const int64_t b = q / points, pt = q % points;
    GridTaps<float> taps;
    grid_sample_taps(grid[2 * q], grid[2 * q + 1], p, &taps);
    grid_sample_point(taps, p, x + b * c * plane, c, y + b * c * points + pt, points);
  }
}

// dGrid of each point, and with `dx` its shares of dX by atomicAdd.
__global__ void grid_sample_grad_points_kernel(const float* dy, const float* x, const float* grid, float* dx,
                                               float* dgrid, int64_t n, int64_t c, int64_t points,
                                               GridSampleParams p) {
  const int64_t plane = p.height * p.width;
  GRID_STRIDE(q, n * points) {
    const int64_t b = q / points, pt = q % points;
    GridTaps<float> taps;
    grid_sample_taps(grid[2 * q], grid[2 * q + 1], p, &taps);
    float* dx_image = dx ? dx + b * c * plane : nullptr;
    float ggx, ggy;
    grid_sample_point_grad(
        taps, p, dy + b * c * points + pt, points, x + b * c * plane, c,
        [dx_image](int64_t at, float v) {
          if (dx_image) atomicAdd(dx_image + at, v);
        },
        &ggx, &ggy);
    if (dgrid) {
      dgrid[2 * q] = ggx;
      dgrid[2 * q + 1] = ggy;
    }
  }
}

// dX plane by plane, points in order (the CPU kernel's order).
__global__ void grid_sample_grad_planes_kernel(const float* dy, const float* grid, float* dx, int64_t n, int64_t c,
                                               int64_t points, GridSampleParams p) {
  const int64_t plane = p.height * p.width;
  GRID_STRIDE(bc, n * c) {
    const int64_t b = bc / c;
    GridTaps<float> taps;
    for (int64_t pt = 0; pt < points; ++pt) {
      const int64_t q = b * points + pt;
      grid_sample_taps(grid[2 * q], grid[2 * q + 1], p, &taps);
      const float g = dy[bc * points + pt];
      for (int k = 0; k < taps.count; ++k)
        if (taps.valid[k]) dx[bc * plane + taps.y[k] * p.width + taps.x[k]] += taps.w[k] * g;
    }
  }
}

#undef GRID_STRIDE

}  // namespace

cudaError_t launch_grid_sample(const float* x, const float* grid, float* y, int64_t n, int64_t c, int64_t points,
                               const GridSampleParams& p, cudaStream_t stream) {
  if (n * points == 0 || c == 0) return cudaSuccess;
  grid_sample_kernel<<<blocks_for(n * points), kThreads, 0, stream>>>(x, grid, y, n, c, points, p);
  return cudaGetLastError();
}

cudaError_t launch_grid_sample_grad(const float* dy, const float* x, const float* grid, float* dx, float* dgrid,
                                    int64_t n, int64_t c, int64_t points, const GridSampleParams& p,
                                    bool deterministic, cudaStream_t stream) {
  if (dx) {
    cudaError_t e = cudaMemsetAsync(dx, 0, static_cast<size_t>(n * c * p.height * p.width) * sizeof(float), stream);
    if (e != cudaSuccess) return e;
  }
  if (n * points == 0) return cudaSuccess;
  if (dgrid || (dx && !deterministic))
    grid_sample_grad_points_kernel<<<blocks_for(n * points), kThreads, 0, stream>>>(
        dy, x, grid, deterministic ? nullptr : dx, dgrid, n, c, points, p);
  if (dx && deterministic && n * c > 0)
    grid_sample_grad_planes_kernel<<<blocks_for(n * c), kThreads, 0, stream>>>(dy, grid, dx, n, c, points, p);
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
