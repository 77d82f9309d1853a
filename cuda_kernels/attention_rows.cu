// CUDA row kernels of the "cublas" attention candidate (the GEMMs are
// cuBLAS's, runtime/cuda/kernels/attention.cc): one warp per row of the
// [B*H*T, S] block of scores, the arithmetic attention_rows.h's, shared with
// the CPU "gemm" candidate. Warp reductions run a fixed butterfly, so runs
// repeat bit for bit.
#include "cuda_kernels/attention_rows.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = cuda::kThreads / kWarp;

__device__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// x [rows, S]: scale * q.k in, dropped probabilities out; lse [rows].
__global__ void attention_softmax_rows(AttentionGeometry g, const float* bias, const bool* mask, float* x,
                                       float* lse, int64_t rows) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;  // the whole warp leaves together
  int lane = static_cast<int>(threadIdx.x % kWarp);
  float* xr = x + row * g.keys;
  float shift = attention_row_shift(warp_max(attention_row_scores<float>(g, bias, mask, row, xr, lane, kWarp)));
  float sum = warp_sum(attention_row_exp<float>(g, xr, shift, lane, kWarp));
  attention_row_probs<float>(g, row, xr, sum, lane, kWarp);
  if (lane == 0) lse[row] = attention_row_lse(shift, sum);
}

// x: scale * q.k in, dropped probabilities out; y: dO . v in, score gradient out.
__global__ void attention_grad_rows(AttentionGeometry g, const float* bias, const bool* mask, const float* dout,
                                    const float* out, const float* lse, float* x, float* y, float* dscores,
                                    int64_t rows) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;
  int lane = static_cast<int>(threadIdx.x % kWarp);
  float dot = warp_sum(attention_row_dot(dout + row * g.value_size, out + row * g.value_size, g.value_size, lane,
                                         kWarp));
  attention_row_grad<float>(g, bias, mask, row, lse[row], dot, x + row * g.keys, y + row * g.keys,
                            dscores ? dscores + row * g.keys : nullptr, lane, kWarp);
}

unsigned row_blocks(int64_t rows) { return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock); }

}  // namespace

int launch_attention_softmax_rows(const AttentionGeometry& g, const float* bias, const bool* mask, float* x,
                                  float* lse, void* stream) {
  int64_t rows = g.batch * g.heads * g.queries;
  if (rows == 0) return cudaSuccess;
  attention_softmax_rows<<<row_blocks(rows), cuda::kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      g, bias, mask, x, lse, rows);
  return cudaGetLastError();
}

int launch_attention_grad_rows(const AttentionGeometry& g, const float* bias, const bool* mask, const float* dout,
                               const float* out, const float* lse, float* x, float* y, float* dscores,
                               void* stream) {
  int64_t rows = g.batch * g.heads * g.queries;
  if (rows == 0) return cudaSuccess;
  attention_grad_rows<<<row_blocks(rows), cuda::kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      g, bias, mask, dout, out, lse, x, y, dscores, rows);
  return cudaGetLastError();
}

}  // namespace ort_train
