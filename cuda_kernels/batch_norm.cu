#include "cuda_kernels/batch_norm.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {

constexpr int kSumThreads = 256;
constexpr int64_t kMaxSumChunks = 64;

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{gridDim.x} * blockDim.x)

// ---- BatchNormalization ----------------------------------------------------

int64_t sum_chunks(int64_t N, int64_t S) {
  int64_t per = int64_t{kSumThreads} * 8;
  int64_t c = (N * S + per - 1) / per;
  return c < 1 ? 1 : (c > kMaxSumChunks ? kMaxSumChunks : c);
}

// Block (channel c, chunk part): a fixed per-thread order, then a fixed tree.
__global__ void channel_partial_kernel(ChannelSum kind, const float* x, const float* dy, const double* mean,
                                       const double* inv_std, int64_t C, int64_t S, int64_t count, int64_t chunks,
                                       double* partials) {
  __shared__ double b0[kSumThreads], b1[kSumThreads];
  int64_t c = blockIdx.x / chunks, part = blockIdx.x % chunks;
  double a0 = 0, a1 = 0;
  double m = kind == ChannelSum::kX ? 0.0 : mean[c];
  double inv = kind == ChannelSum::kGrad ? inv_std[c] : 0.0;
  for (int64_t j = part * kSumThreads + threadIdx.x; j < count; j += chunks * kSumThreads) {
    int64_t k = (j / S * C + c) * S + j % S;
    if (kind == ChannelSum::kX) {
      a0 += x[k];
    } else if (kind == ChannelSum::kSquaredDeviation) {
      double d = static_cast<double>(x[k]) - m;
      a0 += d * d;
    } else {
      double g = dy[k];
      a0 += g;
      a1 += g * (static_cast<double>(x[k]) - m) * inv;
    }
  }
  b0[threadIdx.x] = a0;
  b1[threadIdx.x] = a1;
  __syncthreads();
  for (int s = kSumThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      b0[threadIdx.x] += b0[threadIdx.x + s];
      b1[threadIdx.x] += b1[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x * 2] = b0[0];
    partials[blockIdx.x * 2 + 1] = b1[0];
  }
}

__global__ void channel_finish_kernel(ChannelSum kind, const double* partials, int64_t C, int64_t chunks,
                                      double divisor, double* out0, double* out1) {
  GRID_STRIDE(c, C) {
    double s0 = 0, s1 = 0;
    for (int64_t p = 0; p < chunks; ++p) {
      s0 += partials[(c * chunks + p) * 2];
      s1 += partials[(c * chunks + p) * 2 + 1];
    }
    if (kind == ChannelSum::kGrad) {
      out0[c] = s0;
      if (out1) out1[c] = s1;
    } else {
      out0[c] = s0 / divisor;
    }
  }
}

__global__ void load_stats_kernel(const void* src, bool src_is_double, int64_t n, double* dst) {
  GRID_STRIDE(i, n) {
    dst[i] = src_is_double ? static_cast<const double*>(src)[i] : static_cast<double>(static_cast<const float*>(src)[i]);
  }
}

__global__ void store_float_kernel(const double* src, float* dst, int64_t n) {
  GRID_STRIDE(i, n) { dst[i] = static_cast<float>(src[i]); }
}

// Explicit roundings so the compiler fuses nothing the CPU does not.
__global__ void batch_norm_prepare_kernel(int64_t C, const double* mean, const double* var, const float* scale,
                                          const float* bias, double eps, const float* running_mean,
                                          const float* running_var, double momentum, float* out_mean,
                                          float* out_var, float* a, float* shift) {
  GRID_STRIDE(c, C) {
    float av = static_cast<float>(__ddiv_rn(scale[c], sqrt(__dadd_rn(var[c], eps))));
    a[c] = av;
    shift[c] = static_cast<float>(__dsub_rn(bias[c], __dmul_rn(mean[c], av)));
    double keep = momentum, take = 1 - momentum;
    if (out_mean)
      out_mean[c] = static_cast<float>(__dadd_rn(__dmul_rn(running_mean[c], keep), __dmul_rn(mean[c], take)));
    if (out_var) out_var[c] = static_cast<float>(__dadd_rn(__dmul_rn(running_var[c], keep), __dmul_rn(var[c], take)));
  }
}

__global__ void batch_norm_apply_kernel(const float* x, float* y, const float* a, const float* shift, int64_t total,
                                        int64_t C, int64_t S) {
  GRID_STRIDE(i, total) {
    int64_t c = i / S % C;
    y[i] = __fadd_rn(__fmul_rn(x[i], a[c]), shift[c]);
  }
}

__global__ void inv_std_kernel(const double* var, double eps, int64_t C, double* inv_std) {
  GRID_STRIDE(c, C) { inv_std[c] = 1.0 / sqrt(var[c] + eps); }
}

__global__ void batch_norm_grad_dx_kernel(const float* x, const float* dy, const float* scale, const double* mean,
                                          const double* inv_std, const double* sum_dy, const double* sum_dy_xhat,
                                          bool training, int64_t total, int64_t C, int64_t S, double cnt, float* dx) {
  GRID_STRIDE(k, total) {
    int64_t c = k / S % C;
    double inv = inv_std[c];
    double a = static_cast<double>(scale[c]) * inv;
    double v = a * static_cast<double>(dy[k]);
    if (training) v -= a * (sum_dy[c] + (static_cast<double>(x[k]) - mean[c]) * inv * sum_dy_xhat[c]) / cnt;
    dx[k] = static_cast<float>(v);
  }
}

#undef GRID_STRIDE

}  // namespace

int64_t channel_sum_partials(int64_t N, int64_t C, int64_t S) { return C * sum_chunks(N, S) * 2; }

cudaError_t launch_channel_sums(ChannelSum kind, const float* x, const float* dy, const double* mean,
                                const double* inv_std, int64_t N, int64_t C, int64_t S, double divisor,
                                double* partials, double* out0, double* out1, cudaStream_t stream) {
  if (C == 0) return cudaSuccess;
  int64_t chunks = sum_chunks(N, S);
  channel_partial_kernel<<<static_cast<unsigned>(C * chunks), kSumThreads, 0, stream>>>(kind, x, dy, mean, inv_std, C,
                                                                                      S, N * S, chunks, partials);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  channel_finish_kernel<<<blocks_for(C), kThreads, 0, stream>>>(kind, partials, C, chunks, divisor, out0, out1);
  return cudaGetLastError();
}

cudaError_t launch_load_stats(const void* src, bool src_is_double, int64_t n, double* dst, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  load_stats_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, src_is_double, n, dst);
  return cudaGetLastError();
}

cudaError_t launch_store_float(const double* src, float* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  store_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t launch_batch_norm_prepare(int64_t C, const double* mean, const double* var, const float* scale,
                                      const float* bias, double eps, const float* running_mean,
                                      const float* running_var, double momentum, float* out_mean, float* out_var,
                                      float* a, float* shift, cudaStream_t stream) {
  if (C == 0) return cudaSuccess;
  batch_norm_prepare_kernel<<<blocks_for(C), kThreads, 0, stream>>>(C, mean, var, scale, bias, eps, running_mean,
                                                                    running_var, momentum, out_mean, out_var, a, shift);
  return cudaGetLastError();
}

cudaError_t launch_batch_norm_apply(const float* x, float* y, const float* a, const float* shift, int64_t N,
                                    int64_t C, int64_t S, cudaStream_t stream) {
  int64_t total = N * C * S;
  if (total == 0) return cudaSuccess;
  batch_norm_apply_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, a, shift, total, C, S);
  return cudaGetLastError();
}

cudaError_t launch_inv_std(const double* var, double eps, int64_t C, double* inv_std, cudaStream_t stream) {
  if (C == 0) return cudaSuccess;
  inv_std_kernel<<<blocks_for(C), kThreads, 0, stream>>>(var, eps, C, inv_std);
  return cudaGetLastError();
}

cudaError_t launch_batch_norm_grad_dx(const float* x, const float* dy, const float* scale, const double* mean,
                                      const double* inv_std, const double* sum_dy, const double* sum_dy_xhat,
                                      bool training, int64_t N, int64_t C, int64_t S, float* dx,
                                      cudaStream_t stream) {
  int64_t total = N * C * S;
  if (total == 0) return cudaSuccess;
  batch_norm_grad_dx_kernel<<<blocks_for(total), kThreads, 0, stream>>>(
      x, dy, scale, mean, inv_std, sum_dy, sum_dy_xhat, training, total, C, S, static_cast<double>(N * S), dx);
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
