#include <cfloat>
#include <cmath>
#include <limits>

#include "cuda_kernels/reduce.h"
#include "numerics/float16.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {


template <typename T> struct AccOf { using type = double; };
template <> struct AccOf<int32_t> { using type = int64_t; };
template <> struct AccOf<int64_t> { using type = int64_t; };
// 16-bit floats: float32 math, one rounding of the result (autocast's bias gradients).
template <> struct AccOf<Float16> { using type = float; };
template <> struct AccOf<BFloat16> { using type = float; };

template <typename A>
__device__ __forceinline__ A init_of(ReduceOp op) {
  if (op == ReduceOp::kMax) return std::numeric_limits<A>::lowest();
  if (op == ReduceOp::kMin) return std::numeric_limits<A>::max();
  if (op == ReduceOp::kProd) return A(1);
  return A(0);
}

template <typename A>
__device__ __forceinline__ A combine(ReduceOp op, A acc, A v) {
  switch (op) {
    case ReduceOp::kMax: return v > acc || v != v ? v : acc;
    case ReduceOp::kMin: return v < acc || v != v ? v : acc;
    case ReduceOp::kProd: return acc * v;
    default: return acc + v;
  }
}

// The value an element contributes (after the op's map), given the row max for LogSumExp.
template <typename A>
__device__ __forceinline__ A contribution(ReduceOp op, A x, A row_max) {
  switch (op) {
    case ReduceOp::kSumSquare: case ReduceOp::kL2: return x * x;
    case ReduceOp::kL1: return x < A(0) ? -x : x;
    case ReduceOp::kLogSumExp: return static_cast<A>(exp(static_cast<double>(x - row_max)));
    default: return x;
  }
}

template <typename A>
__device__ __forceinline__ A finish(ReduceOp op, A acc, int64_t count, A row_max) {
  switch (op) {
    case ReduceOp::kMean: return count ? static_cast<A>(acc / static_cast<A>(count)) : acc;
    case ReduceOp::kL2: return static_cast<A>(sqrt(static_cast<double>(acc)));
    case ReduceOp::kLogSumExp: return static_cast<A>(log(static_cast<double>(acc))) + row_max;
    default: return acc;
  }
}

template <typename A>
__device__ A block_combine(ReduceOp op, A v, A* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] = combine(op, buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  A out = buf[0];
  __syncthreads();
  return out;
}

// One thread per output (many outputs: the bias-gradient shape).
template <typename T>
__global__ void reduce_per_thread(ReduceOp op, const T* in, T* out, int64_t outputs, int64_t count, IndexMap kept,
                                  IndexMap reduced) {
  using A = typename AccOf<T>::type;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < outputs; o += int64_t{gridDim.x} * blockDim.x) {
    const T* base = in + index_map_offset(kept, o);
    A row_max = A(0);
    if (op == ReduceOp::kLogSumExp) {
      row_max = init_of<A>(ReduceOp::kMax);
      for (int64_t r = 0; r < count; ++r) row_max = combine(ReduceOp::kMax, row_max, static_cast<A>(base[index_map_offset(reduced, r)]));
    }
    ReduceOp acc_op = op == ReduceOp::kMax || op == ReduceOp::kMin || op == ReduceOp::kProd ? op : ReduceOp::kSum;
    A acc = init_of<A>(acc_op);
    for (int64_t r = 0; r < count; ++r)
      acc = combine(acc_op, acc, contribution(op, static_cast<A>(base[index_map_offset(reduced, r)]), row_max));
    out[o] = static_cast<T>(finish(op, acc, count, row_max));
  }
}

// One block per output (few outputs, long reductions: a loss over all elements).
template <typename T>
__global__ void reduce_per_block(ReduceOp op, const T* in, T* out, int64_t count, IndexMap kept, IndexMap reduced) {
  using A = typename AccOf<T>::type;
  __shared__ A buf[kThreads];
  int64_t o = blockIdx.x;
  const T* base = in + index_map_offset(kept, o);
  A row_max = A(0);
  if (op == ReduceOp::kLogSumExp) {
    A m = init_of<A>(ReduceOp::kMax);
    for (int64_t r = threadIdx.x; r < count; r += kThreads) m = combine(ReduceOp::kMax, m, static_cast<A>(base[index_map_offset(reduced, r)]));
    row_max = block_combine(ReduceOp::kMax, m, buf);
  }
  ReduceOp acc_op = op == ReduceOp::kMax || op == ReduceOp::kMin || op == ReduceOp::kProd ? op : ReduceOp::kSum;
  A acc = init_of<A>(acc_op);
  for (int64_t r = threadIdx.x; r < count; r += kThreads)
    acc = combine(acc_op, acc, contribution(op, static_cast<A>(base[index_map_offset(reduced, r)]), row_max));
  acc = block_combine(acc_op, acc, buf);
  if (threadIdx.x == 0) out[o] = static_cast<T>(finish(op, acc, count, row_max));
}

template <typename T>
cudaError_t reduce_typed(ReduceOp op, const T* in, T* out, int64_t outputs, int64_t count, const IndexMap& kept,
                         const IndexMap& reduced, cudaStream_t s) {
  if (outputs < 8192 && count >= 512 && outputs <= 2147483647) {
    reduce_per_block<T><<<static_cast<unsigned>(outputs), kThreads, 0, s>>>(op, in, out, count, kept, reduced);
  } else {
    int64_t blocks = (outputs + kThreads - 1) / kThreads;
    reduce_per_thread<T><<<static_cast<unsigned>(blocks > 1048576 ? 1048576 : blocks), kThreads, 0, s>>>(
        op, in, out, outputs, count, kept, reduced);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_reduce(ReduceOp op, ElemType t, const void* in, void* out, int64_t outputs, int64_t count,
                          const IndexMap& kept, const IndexMap& reduced, cudaStream_t s) {
  if (outputs == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: return reduce_typed(op, static_cast<const float*>(in), static_cast<float*>(out), outputs, count, kept, reduced, s);
    case ElemType::kF64: return reduce_typed(op, static_cast<const double*>(in), static_cast<double*>(out), outputs, count, kept, reduced, s);
    case ElemType::kI32: return reduce_typed(op, static_cast<const int32_t*>(in), static_cast<int32_t*>(out), outputs, count, kept, reduced, s);
    case ElemType::kI64: return reduce_typed(op, static_cast<const int64_t*>(in), static_cast<int64_t*>(out), outputs, count, kept, reduced, s);
    case ElemType::kF16: return reduce_typed(op, static_cast<const Float16*>(in), static_cast<Float16*>(out), outputs, count, kept, reduced, s);
    case ElemType::kBF16: return reduce_typed(op, static_cast<const BFloat16*>(in), static_cast<BFloat16*>(out), outputs, count, kept, reduced, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ort_train::cuda
