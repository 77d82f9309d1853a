#include "cuda_kernels/optimizers.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {


__global__ void sgd_kernel(MultiTensorTable t, SgdArgs a) {
  int64_t c = blockIdx.x;
  int p = t.chunk_param[c];
  float* w = t.params[p];
  const float* g = t.grads[p];
  float wd = t.decay[p];
  float* m = a.momentum_buffer ? a.momentum_buffer + t.offsets[p] : nullptr;
  for (int64_t k = t.chunk_begin[c] + threadIdx.x; k < t.chunk_end[c]; k += kThreads)
    sgd_element(w[k], g[k], m ? m + k : nullptr, wd, a.c);
}

__global__ void adam_kernel(MultiTensorTable t, AdamArgs a) {
  int64_t c = blockIdx.x;
  int p = t.chunk_param[c];
  float* w = t.params[p];
  const float* g = t.grads[p];
  float* m = a.m + t.offsets[p];
  float* v = a.v + t.offsets[p];
  float wd = t.decay[p];
  if (a.c.huggingface) {
    for (int64_t k = t.chunk_begin[c] + threadIdx.x; k < t.chunk_end[c]; k += kThreads)
      adam_huggingface_element(w[k], g[k], m[k], v[k], wd, a.c);
    return;
  }
  const AdamDecay d = adam_decay(a.c, wd);
  for (int64_t k = t.chunk_begin[c] + threadIdx.x; k < t.chunk_end[c]; k += kThreads)
    adam_element(w[k], g[k], m[k], v[k], a.c, d);
}

// Block-wide sum in a fixed tree order (deterministic).

__global__ void lamb_moments_kernel(MultiTensorTable t, LambArgs a) {
  __shared__ double buf[kThreads];
  int64_t c = blockIdx.x;
  int p = t.chunk_param[c];
  const float* w = t.params[p];
  const float* g = t.grads[p];
  float* m = a.m + t.offsets[p];
  float* v = a.v + t.offsets[p];
  float* r = a.r + t.offsets[p];
  double wd = t.decay[p];
  double ws = 0, rs = 0;
  for (int64_t k = t.chunk_begin[c] + threadIdx.x; k < t.chunk_end[c]; k += kThreads) {
    double rk = lamb_direction(w[k], g[k], m[k], v[k], wd, a.c);
    r[k] = static_cast<float>(rk);
    ws += static_cast<double>(w[k]) * w[k];
    rs += rk * rk;
  }
  ws = block_sum(ws, buf);
  rs = block_sum(rs, buf);
  if (threadIdx.x == 0) {
    a.partials[2 * c] = ws;
    a.partials[2 * c + 1] = rs;
  }
}

// One thread per parameter: its chunks' partial sums in chunk order.
__global__ void lamb_ratio_kernel(MultiTensorTable t, LambArgs a) {
  int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (p >= t.params_count) return;
  double ws = 0, rs = 0;
  for (int c = t.first_chunk[p]; c < t.first_chunk[p + 1]; ++c) {
    ws += a.partials[2 * c];
    rs += a.partials[2 * c + 1];
  }
  a.ratios[p] = lamb_ratio(ws, rs, a.c);
}

__global__ void lamb_update_kernel(MultiTensorTable t, LambArgs a) {
  int64_t c = blockIdx.x;
  int p = t.chunk_param[c];
  float* w = t.params[p];
  const float* r = a.r + t.offsets[p];
  float step = static_cast<float>(a.c.lr * a.ratios[p]);
  for (int64_t k = t.chunk_begin[c] + threadIdx.x; k < t.chunk_end[c]; k += kThreads) w[k] -= step * r[k];
}

}  // namespace

cudaError_t launch_sgd(const MultiTensorTable& t, const SgdArgs& a, cudaStream_t stream) {
  if (t.chunks == 0) return cudaSuccess;
  sgd_kernel<<<static_cast<unsigned>(t.chunks), kThreads, 0, stream>>>(t, a);
  return cudaGetLastError();
}

cudaError_t launch_adam(const MultiTensorTable& t, const AdamArgs& a, cudaStream_t stream) {
  if (t.chunks == 0) return cudaSuccess;
  adam_kernel<<<static_cast<unsigned>(t.chunks), kThreads, 0, stream>>>(t, a);
  return cudaGetLastError();
}

cudaError_t launch_lamb(const MultiTensorTable& t, const LambArgs& a, cudaStream_t stream) {
  if (t.chunks == 0) return cudaSuccess;
  lamb_moments_kernel<<<static_cast<unsigned>(t.chunks), kThreads, 0, stream>>>(t, a);
  lamb_ratio_kernel<<<static_cast<unsigned>((t.params_count + 127) / 128), 128, 0, stream>>>(t, a);
  lamb_update_kernel<<<static_cast<unsigned>(t.chunks), kThreads, 0, stream>>>(t, a);
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
