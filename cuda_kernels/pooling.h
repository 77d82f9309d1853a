// Float32 kernels for pooling and the pooling gradients, matching the CPU
// kernels' window walk and summation order. Launchers queue on `stream` and return the launch's
// cudaError_t. Deterministic unless a launcher says otherwise.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda_kernels/tensor_map.h"  // ORT_HOST_DEVICE
#include "numerics/index_fault.h"
#include "numerics/lp_pool.h"

namespace ort_train::cuda {

// A pooling window over up to 3 spatial dims. Fewer dims are padded in front
// with unit dims (in = kernel = stride = dilation = out = 1, no pads), which
// keeps row-major offsets and window order unchanged.
struct PoolGeometry {
  int64_t in[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3], out[3];
};

// Window elements of output position `o` along dim d that lie inside the input
// and inside the padded input.
ORT_HOST_DEVICE void window_counts(const PoolGeometry& g, int d, int64_t o, int64_t* inside, int64_t* padded) {
  int64_t start = o * g.stride[d] - g.pad_begin[d];
  int64_t a = 0, b = 0;
  for (int64_t k = 0; k < g.kernel[d]; ++k) {
    int64_t i = start + k * g.dilation[d];
    a += i >= 0 && i < g.in[d];
    b += i >= -g.pad_begin[d] && i < g.in[d] + g.pad_end[d];
  }
  *inside = a;
  *padded = b;
}

// Calls fn(i0, i1, i2, offset) for the window elements of output position o
// that lie inside the input, in row-major window order (the CPU's walk).
template <typename F>
ORT_HOST_DEVICE void for_each_in_window(const PoolGeometry& g, const int64_t* o, F&& fn) {
  for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
    int64_t i0 = o[0] * g.stride[0] - g.pad_begin[0] + k0 * g.dilation[0];
    if (i0 < 0 || i0 >= g.in[0]) continue;
    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
      int64_t i1 = o[1] * g.stride[1] - g.pad_begin[1] + k1 * g.dilation[1];
      if (i1 < 0 || i1 >= g.in[1]) continue;
      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
        int64_t i2 = o[2] * g.stride[2] - g.pad_begin[2] + k2 * g.dilation[2];
        if (i2 < 0 || i2 >= g.in[2]) continue;
        fn(i0, i1, i2, (i0 * g.in[1] + i1) * g.in[2] + i2);
      }
    }
  }
}

// One output of MaxPool over a plane: ties go to the first element; the index
// is the offset in the plane (row-major, or first spatial dim fastest with
// column_major), -1 for a window entirely in padding.
ORT_HOST_DEVICE void max_pool_at(const float* xp, const PoolGeometry& g, const int64_t* o, bool column_major,
                                 float* best_out, int64_t* best_idx_out) {
  float best = -INFINITY;
  int64_t best_idx = -1;
  for_each_in_window(g, o, [&](int64_t i0, int64_t i1, int64_t i2, int64_t off) {
    float v = xp[off];
    if (v > best || best_idx < 0) {
      best = v;
      best_idx = column_major ? i0 + g.in[0] * (i1 + g.in[1] * i2) : off;
    }
  });
  *best_out = best;
  *best_idx_out = best_idx;
}

// One output of AveragePool over a plane.
ORT_HOST_DEVICE float average_pool_at(const float* xp, const PoolGeometry& g, const int64_t* o,
                                      bool count_include_pad) {
  float sum = 0.f;
  int64_t count = 0;
  for_each_in_window(g, o, [&](int64_t, int64_t, int64_t, int64_t off) {
    sum += xp[off];
    ++count;
  });
  int64_t div = count;
  if (count_include_pad) {
    div = 1;
    for (int d = 0; d < 3; ++d) {
      int64_t a, b;
      window_counts(g, d, o[d], &a, &b);
      div *= b;
    }
  }
  return div > 0 ? sum / static_cast<float>(div) : 0.f;
}

// One output of LpPool over a plane: (sum of |x|^p over the window's inside)^(1/p).
ORT_HOST_DEVICE float lp_pool_at(const float* xp, const PoolGeometry& g, const int64_t* o, int64_t p) {
  float sum = 0.f;
  for_each_in_window(g, o, [&](int64_t, int64_t, int64_t, int64_t off) { sum += lp_pool_term(xp[off], p); });
  return lp_pool_root(sum, p);
}

// y (and indices when not null: plane offset + argmax offset in the plane, row-major
// or, with column_major, first spatial dim fastest) for `planes` (image, channel) planes.
cudaError_t launch_max_pool(const float* x, float* y, int64_t* indices, int64_t planes, const PoolGeometry& g,
                            bool column_major, cudaStream_t stream);
cudaError_t launch_average_pool(const float* x, float* y, int64_t planes, const PoolGeometry& g,
                                bool count_include_pad, cudaStream_t stream);
cudaError_t launch_lp_pool(const float* x, float* y, int64_t planes, const PoolGeometry& g, int64_t p,
                           cudaStream_t stream);
// One value per plane of `size` elements: the mean, the max, or (lp_order > 0)
// the Lp norm.
enum class GlobalPoolKind { kAverage, kMax, kLp };
cudaError_t launch_global_pool(const float* x, float* y, int64_t planes, int64_t size, GlobalPoolKind kind,
                               int64_t lp_order, cudaStream_t stream);
// dx = 0, then dx[indices[i]] += dy[i]. An index outside its own plane is
// skipped and recorded at `fault`. `deterministic`: one thread per plane adding in dY order; otherwise
// one thread per dY element with atomicAdd (order varies where windows overlap).
cudaError_t launch_max_pool_grad(const float* dy, const int64_t* indices, float* dx, int64_t planes,
                                 int64_t out_plane, int64_t in_plane, bool deterministic, IndexFaultSite fault,
                                 cudaStream_t stream);
// One thread per dx element gathers the shares of the windows covering it, in
// row-major window order (the CPU kernel's order).
cudaError_t launch_average_pool_grad(const float* dy, float* dx, int64_t planes, const PoolGeometry& g,
                                     bool count_include_pad, cudaStream_t stream);

}  // namespace ort_train::cuda
