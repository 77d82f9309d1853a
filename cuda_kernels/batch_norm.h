// Float32 BatchNormalization kernels: per-channel statistics in double (fixed
// summation order), normalization, and the gradient. Launchers queue on
// `stream` and return the launch's cudaError_t.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ort_train::cuda {

// ---- BatchNormalization: per-channel statistics in double over N and S -------

enum class ChannelSum : int {
  kX,                 // out0 = Σ x / divisor
  kSquaredDeviation,  // out0 = Σ (x - mean)^2 / divisor
  kGrad,              // out0 = Σ dy, out1 = Σ dy (x - mean) inv_std   (divisor unused)
};
// Doubles of scratch launch_channel_sums needs for these dims.
int64_t channel_sum_partials(int64_t N, int64_t C, int64_t S);
// x and dy are [N, C, S]; mean and inv_std per channel (device doubles).
cudaError_t launch_channel_sums(ChannelSum kind, const float* x, const float* dy, const double* mean,
                                const double* inv_std, int64_t N, int64_t C, int64_t S, double divisor,
                                double* partials, double* out0, double* out1, cudaStream_t stream);
// dst[i] = src[i] as double (src float or double).
cudaError_t launch_load_stats(const void* src, bool src_is_double, int64_t n, double* dst, cudaStream_t stream);
// dst[i] = float(src[i]).
cudaError_t launch_store_float(const double* src, float* dst, int64_t n, cudaStream_t stream);
// Per channel: a = scale / sqrt(var + eps), shift = bias - mean * a (in double, stored
// as float); when out_mean/out_var are not null, the running statistics
// running * momentum + batch * (1 - momentum).
cudaError_t launch_batch_norm_prepare(int64_t C, const double* mean, const double* var, const float* scale,
                                      const float* bias, double eps, const float* running_mean,
                                      const float* running_var, double momentum, float* out_mean, float* out_var,
                                      float* a, float* shift, cudaStream_t stream);
// y = x * a[c] + shift[c] (no fused multiply-add, as on the CPU).
cudaError_t launch_batch_norm_apply(const float* x, float* y, const float* a, const float* shift, int64_t N,
                                    int64_t C, int64_t S, cudaStream_t stream);
// inv_std[c] = 1 / sqrt(var[c] + eps).
cudaError_t launch_inv_std(const double* var, double eps, int64_t C, double* inv_std, cudaStream_t stream);
// dx = scale inv_std dy, minus scale inv_std (Σdy + x̂ Σdy x̂) / (N S) when training.
cudaError_t launch_batch_norm_grad_dx(const float* x, const float* dy, const float* scale, const double* mean,
                                      const double* inv_std, const double* sum_dy, const double* sum_dy_xhat,
                                      bool training, int64_t N, int64_t C, int64_t S, float* dx,
                                      cudaStream_t stream);

}  // namespace ort_train::cuda
