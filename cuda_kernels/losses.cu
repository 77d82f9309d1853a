#include <cmath>

#include "cuda_kernels/losses.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {


__device__ __forceinline__ int64_t label_at(const LossArgs& a, int64_t t) {
  return a.labels_int32 ? static_cast<const int32_t*>(a.labels)[t] : static_cast<const int64_t*>(a.labels)[t];
}


// The loss of target t and its weight (both 0 when ignored; NaN loss for a bad label, recorded).
template <typename T>
__device__ void target_loss(const LossArgs& a, const T* logp, int64_t t, double& loss, double& weight) {
  int64_t y = label_at(a, t);
  loss = 0;
  weight = 0;
  if (a.has_ignore && y == a.ignore_index) return;
  if (y < 0 || y >= a.C) {
    loss = NAN;
    report_index_fault(a.fault, IndexFaultKind::kLabel, y, t, 0, a.C);
    return;
  }
  int64_t n = t / a.D, d = t % a.D;
  weight = a.weights ? static_cast<double>(static_cast<const T*>(a.weights)[y]) : 1.0;
  loss = -static_cast<double>(logp[(n * a.C + y) * a.D + d]) * weight;
}

template <typename T>
__global__ void nll_none_kernel(LossArgs a, const T* logp, T* out) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < a.N * a.D; t += int64_t{gridDim.x} * blockDim.x) {
    double l, w;
    target_loss(a, logp, t, l, w);
    out[t] = static_cast<T>(l);
  }
}

// One block: fixed-order sums of losses and weights over all targets.
template <typename T>
__global__ void nll_reduce_kernel(LossArgs a, const T* logp, T* out) {
  __shared__ double buf[kThreads];
  double ls = 0, ws = 0;
  for (int64_t t = threadIdx.x; t < a.N * a.D; t += kThreads) {
    double l, w;
    target_loss(a, logp, t, l, w);
    ls += l;
    ws += w;
  }
  ls = block_sum(ls, buf);
  ws = block_sum(ws, buf);
  if (threadIdx.x == 0) {
    if (a.reduction == LossReduction::kSum) out[0] = static_cast<T>(ls);
    else out[0] = static_cast<T>(ws == 0 ? (ls != ls ? ls : 0.0) : ls / ws);
  }
}

template <typename T>
__global__ void weight_sum_kernel(LossArgs a, double* out) {
  __shared__ double buf[kThreads];
  double ws = 0;
  for (int64_t t = threadIdx.x; t < a.N * a.D; t += kThreads) {
    int64_t y = label_at(a, t);
    if ((a.has_ignore && y == a.ignore_index) || y < 0 || y >= a.C) continue;
    ws += a.weights ? static_cast<double>(static_cast<const T*>(a.weights)[y]) : 1.0;
  }
  ws = block_sum(ws, buf);
  if (threadIdx.x == 0) *out = ws;
}

template <typename T>
__global__ void loss_grad_kernel(LossArgs a, bool softmax, const T* dloss, const T* ref, T* dx, const double* weight_sum) {
  int64_t total = a.N * a.C * a.D;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t d = i % a.D, c = (i / a.D) % a.C, n = i / (a.C * a.D);
    int64_t t = n * a.D + d;
    int64_t y = label_at(a, t);
    if ((a.has_ignore && y == a.ignore_index) || y < 0 || y >= a.C) {
      dx[i] = T(0);
      continue;
    }
    double g = a.reduction == LossReduction::kNone ? static_cast<double>(dloss[t]) : static_cast<double>(dloss[0]);
    if (a.reduction == LossReduction::kMean) g = *weight_sum == 0 ? 0.0 : g / *weight_sum;
    g *= a.weights ? static_cast<double>(static_cast<const T*>(a.weights)[y]) : 1.0;
    double v = softmax ? exp(static_cast<double>(ref[i])) : 0.0;
    if (c == y) v -= 1.0;
    dx[i] = static_cast<T>(g * v);
  }
}


template <typename T>
cudaError_t nll_typed(const LossArgs& a, const void* logp, void* out, cudaStream_t s) {
  if (a.reduction == LossReduction::kNone)
    nll_none_kernel<T><<<blocks_for(a.N * a.D), kThreads, 0, s>>>(a, static_cast<const T*>(logp), static_cast<T*>(out));
  else
    nll_reduce_kernel<T><<<1, kThreads, 0, s>>>(a, static_cast<const T*>(logp), static_cast<T*>(out));
  return cudaGetLastError();
}

template <typename T>
cudaError_t grad_typed(const LossArgs& a, bool softmax, const void* dloss, const void* ref, void* dx, double* scratch,
                       cudaStream_t s) {
  if (a.reduction == LossReduction::kMean) weight_sum_kernel<T><<<1, kThreads, 0, s>>>(a, scratch);
  loss_grad_kernel<T><<<blocks_for(a.N * a.C * a.D), kThreads, 0, s>>>(
      a, softmax, static_cast<const T*>(dloss), static_cast<const T*>(ref), static_cast<T*>(dx), scratch);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_nll_forward(const LossArgs& a, const void* logp, void* out, cudaStream_t s) {
  if (a.t == ElemType::kF32) return nll_typed<float>(a, logp, out, s);
  if (a.t == ElemType::kF64) return nll_typed<double>(a, logp, out, s);
  return cudaErrorInvalidValue;
}

cudaError_t launch_loss_grad(const LossArgs& a, bool softmax, const void* dloss, const void* ref, void* dx,
                             double* scratch, cudaStream_t s) {
  if (a.N * a.C * a.D == 0) return cudaSuccess;
  if (a.t == ElemType::kF32) return grad_typed<float>(a, softmax, dloss, ref, dx, scratch, s);
  if (a.t == ElemType::kF64) return grad_typed<double>(a, softmax, dloss, ref, dx, scratch, s);
  return cudaErrorInvalidValue;
}

}  // namespace ort_train::cuda
