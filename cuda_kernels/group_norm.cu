#include "cuda_kernels/group_norm.h"
#include "cuda_kernels/launch.cuh"
#include "numerics/group_norm.h"

namespace ort_train::cuda {
namespace {

__device__ int64_t affine_of(const GroupNormShape& g, int64_t group, int64_t i) {
  return g.affine_per_group ? group : group * g.channels_per_group + i / g.spatial;
}

// Mean and rstd of row `row`, the same in every thread of the block.
template <typename T>
__device__ void row_stats(const GroupNormShape& g, const T* x, double* buf, double& mean, double& rstd) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < g.row_size; i += kThreads) s += static_cast<double>(x[i]);
  mean = block_sum(s, buf) / static_cast<double>(g.row_size);
  double q = 0;
  for (int64_t i = threadIdx.x; i < g.row_size; i += kThreads) {
    double d = static_cast<double>(x[i]) - mean;
    q += d * d;
  }
  rstd = group_norm_rstd(block_sum(q, buf) / static_cast<double>(g.row_size), g.epsilon);
}

template <typename T>
__global__ void forward_kernel(GroupNormShape g, const T* x, const T* scale, const T* bias, T* y) {
  __shared__ double buf[kThreads];
  const int64_t row = blockIdx.x, group = row % g.groups;
  const T* xr = x + row * g.row_size;
  double mean, rstd;
  row_stats(g, xr, buf, mean, rstd);
  for (int64_t i = threadIdx.x; i < g.row_size; i += kThreads) {
    const int64_t a = affine_of(g, group, i);
    y[row * g.row_size + i] = group_norm_value(xr[i], mean, rstd, scale[a], bias[a]);
  }
}

// One block per row; the per-row affine sums are written by thread 0 after
// block sums per affine entry the row touches (one per group, or its channels).
template <typename T>
__global__ void grad_kernel(GroupNormShape g, const T* dy, const T* x, const T* scale, T* dx, double* dscale_rows,
                            double* dbias_rows) {
  __shared__ double buf[kThreads];
  const int64_t row = blockIdx.x, group = row % g.groups;
  const T* xr = x + row * g.row_size;
  const T* dyr = dy + row * g.row_size;
  double mean, rstd;
  row_stats(g, xr, buf, mean, rstd);
  double s1 = 0, s2 = 0;
  for (int64_t i = threadIdx.x; i < g.row_size; i += kThreads) {
    const double xhat = (static_cast<double>(xr[i]) - mean) * rstd;
    const double dxhat = static_cast<double>(dyr[i]) * static_cast<double>(scale[affine_of(g, group, i)]);
    s1 += dxhat;
    s2 += dxhat * xhat;
  }
  const double mean1 = block_sum(s1, buf) / static_cast<double>(g.row_size);
  const double mean2 = block_sum(s2, buf) / static_cast<double>(g.row_size);
  if (dx)
    for (int64_t i = threadIdx.x; i < g.row_size; i += kThreads) {
      const double xhat = (static_cast<double>(xr[i]) - mean) * rstd;
      const double dxhat = static_cast<double>(dyr[i]) * static_cast<double>(scale[affine_of(g, group, i)]);
      dx[row * g.row_size + i] = static_cast<T>(group_norm_dx(dxhat, xhat, rstd, mean1, mean2));
    }
  // Affine sums: the row covers its group's entry, or channels_per_group channels of `spatial` elements.
  const int64_t entries = g.affine_per_group ? 1 : g.channels_per_group;
  const int64_t span = g.affine_per_group ? g.row_size : g.spatial;
  for (int64_t k = 0; k < entries; ++k) {
    double ds = 0, db = 0;
    for (int64_t i = k * span + threadIdx.x; i < (k + 1) * span; i += kThreads) {
      const double d = static_cast<double>(dyr[i]);
      ds += d * (static_cast<double>(xr[i]) - mean) * rstd;
      db += d;
    }
    ds = block_sum(ds, buf);
    db = block_sum(db, buf);
    if (threadIdx.x == 0) {
      const int64_t a = affine_of(g, group, k * span);
      if (dscale_rows) dscale_rows[row * g.affine + a] = ds;
      if (dbias_rows) dbias_rows[row * g.affine + a] = db;
    }
  }
}

template <typename T>
__global__ void sum_rows_kernel(const double* src, int64_t rows, int64_t affine, T* out) {
  for (int64_t a = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; a < affine; a += int64_t{gridDim.x} * blockDim.x) {
    double v = 0;
    for (int64_t r = 0; r < rows; ++r) v += src[r * affine + a];
    out[a] = static_cast<T>(v);
  }
}

}  // namespace

cudaError_t launch_group_norm(ElemType t, const GroupNormShape& g, const void* x, const void* scale, const void* bias,
                              void* y, cudaStream_t s) {
  if (g.rows == 0 || g.row_size == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(g.rows);
  switch (t) {
    case ElemType::kF32:
      forward_kernel<float><<<blocks, kThreads, 0, s>>>(g, static_cast<const float*>(x), static_cast<const float*>(scale),
                                                        static_cast<const float*>(bias), static_cast<float*>(y));
      break;
    case ElemType::kF64:
      forward_kernel<double><<<blocks, kThreads, 0, s>>>(g, static_cast<const double*>(x),
                                                         static_cast<const double*>(scale),
                                                         static_cast<const double*>(bias), static_cast<double*>(y));
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_group_norm_grad(ElemType t, const GroupNormShape& g, const void* dy, const void* x,
                                   const void* scale, void* dx, double* dscale_rows, double* dbias_rows,
                                   cudaStream_t s) {
  if (g.rows == 0 || g.row_size == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(g.rows);
  switch (t) {
    case ElemType::kF32:
      grad_kernel<float><<<blocks, kThreads, 0, s>>>(g, static_cast<const float*>(dy), static_cast<const float*>(x),
                                                     static_cast<const float*>(scale), static_cast<float*>(dx),
                                                     dscale_rows, dbias_rows);
      break;
    case ElemType::kF64:
      grad_kernel<double><<<blocks, kThreads, 0, s>>>(g, static_cast<const double*>(dy), static_cast<const double*>(x),
                                                      static_cast<const double*>(scale), static_cast<double*>(dx),
                                                      dscale_rows, dbias_rows);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_sum_rows(ElemType t, const double* src, int64_t rows, int64_t affine, void* out, cudaStream_t s) {
  if (affine == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: sum_rows_kernel<<<blocks_for(affine), kThreads, 0, s>>>(src, rows, affine, static_cast<float*>(out)); break;
    case ElemType::kF64: sum_rows_kernel<<<blocks_for(affine), kThreads, 0, s>>>(src, rows, affine, static_cast<double*>(out)); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
