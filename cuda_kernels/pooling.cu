#include "cuda_kernels/pooling.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {



#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{gridDim.x} * blockDim.x)

__device__ inline void decode3(int64_t p, const int64_t* dims, int64_t* o) {
  o[2] = p % dims[2];
  p /= dims[2];
  o[1] = p % dims[1];
  o[0] = p / dims[1];
}

// The CPU walk: window elements in row-major order, ties to the first.
__global__ void max_pool_kernel(const float* x, float* y, int64_t* indices, int64_t total, int64_t in_size,
                                int64_t out_size, PoolGeometry g, bool column_major) {
  GRID_STRIDE(idx, total) {
    int64_t pl = idx / out_size, o[3];
    decode3(idx % out_size, g.out, o);
    float best;
    int64_t best_idx;
    max_pool_at(x + pl * in_size, g, o, column_major, &best, &best_idx);
    y[idx] = best;
    if (indices) indices[idx] = pl * in_size + best_idx;
  }
}

// The pools whose outputs are a function of their window alone: `at(plane,
// geometry, output position)` gives one (AverageAt, LpAt), one thread per output.
struct AverageAt {
  bool count_include_pad;
  __device__ float operator()(const float* xp, const PoolGeometry& g, const int64_t* o) const {
    return average_pool_at(xp, g, o, count_include_pad);
  }
};
struct LpAt {
  int64_t p;
  __device__ float operator()(const float* xp, const PoolGeometry& g, const int64_t* o) const {
    return lp_pool_at(xp, g, o, p);
  }
};

template <typename At>
__global__ void window_pool_kernel(const float* x, float* y, int64_t total, int64_t in_size, int64_t out_size,
                                   PoolGeometry g, At at) {
  GRID_STRIDE(idx, total) {
    int64_t pl = idx / out_size, o[3];
    decode3(idx % out_size, g.out, o);
    y[idx] = at(x + pl * in_size, g, o);
  }
}

// One warp per plane; lanes stride the plane, then a fixed butterfly.
__global__ void global_pool_kernel(const float* x, float* y, int64_t planes, int64_t size, GlobalPoolKind kind,
                                   int64_t lp_order) {
  const bool is_max = kind == GlobalPoolKind::kMax;
  int64_t warp = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32;
  int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  int lane = threadIdx.x % 32;
  for (int64_t pl = warp; pl < planes; pl += warps) {
    const float* p = x + pl * size;
    float acc = is_max ? -INFINITY : 0.f;
    for (int64_t i = lane; i < size; i += 32)
      acc = is_max ? fmaxf(acc, p[i]) : acc + (kind == GlobalPoolKind::kLp ? lp_pool_term(p[i], lp_order) : p[i]);
    for (int s = 16; s > 0; s >>= 1) {
      float other = __shfl_xor_sync(0xffffffffu, acc, s);
      acc = is_max ? fmaxf(acc, other) : acc + other;
    }
    if (lane == 0)
      y[pl] = is_max                          ? acc
              : kind == GlobalPoolKind::kLp ? lp_pool_root(acc, lp_order)
                                              : acc / static_cast<float>(size);
  }
}

// An index outside its own plane of dX is skipped and recorded (index_fault.h).
__global__ void max_pool_grad_serial_kernel(const float* dy, const int64_t* ix, float* dx, int64_t planes,
                                            int64_t out_plane, int64_t in_plane, IndexFaultSite fault) {
  GRID_STRIDE(pl, planes) {
    int64_t lo = pl * in_plane, hi = lo + in_plane;
    for (int64_t i = pl * out_plane; i < (pl + 1) * out_plane; ++i) {
      int64_t t = ix[i];
      if (t >= lo && t < hi) dx[t] += dy[i];
      else report_index_fault(fault, IndexFaultKind::kPlaneIndex, t, i, lo, hi);
    }
  }
}

__global__ void max_pool_grad_atomic_kernel(const float* dy, const int64_t* ix, float* dx, int64_t total,
                                            int64_t out_plane, int64_t in_plane, IndexFaultSite fault) {
  GRID_STRIDE(i, total) {
    int64_t lo = i / out_plane * in_plane, t = ix[i];
    if (t >= lo && t < lo + in_plane) atomicAdd(dx + t, dy[i]);
    else report_index_fault(fault, IndexFaultKind::kPlaneIndex, t, i, lo, lo + in_plane);
  }
}

__global__ void average_pool_grad_kernel(const float* dy, float* dx, int64_t total, int64_t in_size,
                                         int64_t out_size, PoolGeometry g, bool count_include_pad) {
  GRID_STRIDE(idx, total) {
    int64_t pl = idx / in_size, i[3], lo[3], hi[3];
    decode3(idx % in_size, g.in, i);
    for (int d = 0; d < 3; ++d) {
      // Windows o with o*stride - pad_begin <= i <= o*stride - pad_begin + (kernel-1)*dilation.
      int64_t t = i[d] + g.pad_begin[d] - (g.kernel[d] - 1) * g.dilation[d];
      lo[d] = t <= 0 ? 0 : (t + g.stride[d] - 1) / g.stride[d];
      int64_t h = (i[d] + g.pad_begin[d]) / g.stride[d];
      hi[d] = h < g.out[d] - 1 ? h : g.out[d] - 1;
    }
    const float* dyp = dy + pl * out_size;
    float acc = 0.f;
    for (int64_t o0 = lo[0]; o0 <= hi[0]; ++o0) {
      if ((i[0] + g.pad_begin[0] - o0 * g.stride[0]) % g.dilation[0]) continue;
      int64_t in0, pad0;
      window_counts(g, 0, o0, &in0, &pad0);
      for (int64_t o1 = lo[1]; o1 <= hi[1]; ++o1) {
        if ((i[1] + g.pad_begin[1] - o1 * g.stride[1]) % g.dilation[1]) continue;
        int64_t in1, pad1;
        window_counts(g, 1, o1, &in1, &pad1);
        for (int64_t o2 = lo[2]; o2 <= hi[2]; ++o2) {
          if ((i[2] + g.pad_begin[2] - o2 * g.stride[2]) % g.dilation[2]) continue;
          int64_t in2, pad2;
          window_counts(g, 2, o2, &in2, &pad2);
          int64_t div = count_include_pad ? pad0 * pad1 * pad2 : in0 * in1 * in2;
          if (div == 0) continue;
          acc += dyp[(o0 * g.out[1] + o1) * g.out[2] + o2] / static_cast<float>(div);
        }
      }
    }
    dx[idx] = acc;
  }
}

#undef GRID_STRIDE

}  // namespace

cudaError_t launch_max_pool(const float* x, float* y, int64_t* indices, int64_t planes, const PoolGeometry& g,
                            bool column_major, cudaStream_t stream) {
  int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
  int64_t total = planes * out_size;
  if (total == 0) return cudaSuccess;
  max_pool_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, indices, total, in_size, out_size, g, column_major);
  return cudaGetLastError();
}

cudaError_t launch_average_pool(const float* x, float* y, int64_t planes, const PoolGeometry& g,
                                bool count_include_pad, cudaStream_t stream) {
  int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
  int64_t total = planes * out_size;
  if (total == 0) return cudaSuccess;
  window_pool_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, total, in_size, out_size, g,
                                                                 AverageAt{count_include_pad});
  return cudaGetLastError();
}

cudaError_t launch_lp_pool(const float* x, float* y, int64_t planes, const PoolGeometry& g, int64_t p,
                           cudaStream_t stream) {
  int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
  int64_t total = planes * out_size;
  if (total == 0) return cudaSuccess;
  window_pool_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, total, in_size, out_size, g, LpAt{p});
  return cudaGetLastError();
}

cudaError_t launch_global_pool(const float* x, float* y, int64_t planes, int64_t size, GlobalPoolKind kind,
                               int64_t lp_order, cudaStream_t stream) {
  if (planes == 0) return cudaSuccess;
  global_pool_kernel<<<blocks_for(planes * 32), kThreads, 0, stream>>>(x, y, planes, size, kind, lp_order);
  return cudaGetLastError();
}

cudaError_t launch_max_pool_grad(const float* dy, const int64_t* indices, float* dx, int64_t planes,
                                 int64_t out_plane, int64_t in_plane, bool deterministic, IndexFaultSite fault,
                                 cudaStream_t stream) {
  int64_t n = planes * in_plane;
  if (n == 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(dx, 0, static_cast<size_t>(n) * sizeof(float), stream);
  if (e != cudaSuccess || out_plane == 0) return e;
  if (deterministic)
    max_pool_grad_serial_kernel<<<blocks_for(planes), kThreads, 0, stream>>>(dy, indices, dx, planes, out_plane,
                                                                            in_plane, fault);
  else
    max_pool_grad_atomic_kernel<<<blocks_for(planes * out_plane), kThreads, 0, stream>>>(
        dy, indices, dx, planes * out_plane, out_plane, in_plane, fault);
  return cudaGetLastError();
}

cudaError_t launch_average_pool_grad(const float* dy, float* dx, int64_t planes, const PoolGeometry& g,
                                     bool count_include_pad, cudaStream_t stream) {
  int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
  int64_t total = planes * in_size;
  if (total == 0) return cudaSuccess;
  average_pool_grad_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dy, dx, total, in_size, out_size, g,
                                                                       count_include_pad);
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
