#include <cmath>

#include "cuda_kernels/elementwise.h"
#include "numerics/activations.h"  // prelu_value
#include "numerics/cast_value.h"
#include "numerics/modulo.h"
#include "cuda_kernels/launch.cuh"

namespace ort_train::cuda {
namespace {



// Converted back as Cast does: an integer power past its type saturates (a plain cast is undefined).
template <typename T> __device__ T pow_op(T a, T b) {
  return cast_value<double, T>(pow(static_cast<double>(a), static_cast<double>(b)));
}
__device__ float pow_op(float a, float b) { return powf(a, b); }

template <BinaryOp Op, typename T, typename R>
__device__ __forceinline__ R apply_binary(T a, T b) {
  if constexpr (Op == BinaryOp::kAdd) return a + b;
  else if constexpr (Op == BinaryOp::kSub) return a - b;
  else if constexpr (Op == BinaryOp::kMul) return a * b;
  else if constexpr (Op == BinaryOp::kDiv) return div_value<T>(a, b);
  else if constexpr (Op == BinaryOp::kPow) return pow_op(a, b);
  else if constexpr (Op == BinaryOp::kMax) return a > b || a != a ? a : b;  // NaN propagates, as std::max on the CPU path
  else if constexpr (Op == BinaryOp::kMin) return a < b || a != a ? a : b;
  else if constexpr (Op == BinaryOp::kEqual) return a == b;
  else if constexpr (Op == BinaryOp::kLess) return a < b;
  else if constexpr (Op == BinaryOp::kGreater) return a > b;
  else if constexpr (Op == BinaryOp::kLessOrEqual) return a <= b;
  else if constexpr (Op == BinaryOp::kGreaterOrEqual) return a >= b;
  else if constexpr (Op == BinaryOp::kAnd) return a && b;
  else if constexpr (Op == BinaryOp::kOr) return a || b;
  else if constexpr (Op == BinaryOp::kMod) return mod_value<T>(a, b, false);
  else if constexpr (Op == BinaryOp::kFmod) return mod_value<T>(a, b, true);
  else if constexpr (Op == BinaryOp::kPRelu) return prelu_value<T>(a, b);
  else return a != b;  // Xor
}

template <BinaryOp Op, typename T, typename R>
__global__ void binary_kernel(const T* a, const T* b, R* out, int64_t n, bool same_shape, IndexMap am, IndexMap bm) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t ia = same_shape ? i : index_map_offset(am, i);
    int64_t ib = same_shape ? i : index_map_offset(bm, i);
    out[i] = apply_binary<Op, T, R>(a[ia], b[ib]);
  }
}

template <BinaryOp Op, typename H>
__global__ void binary_half_kernel(const H* a, const H* b, H* out, int64_t n, bool same_shape, IndexMap am, IndexMap bm) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t ia = same_shape ? i : index_map_offset(am, i);
    int64_t ib = same_shape ? i : index_map_offset(bm, i);
    out[i] = half_binary_value<H>(Op, a[ia], b[ib]);
  }
}

template <BinaryOp Op, typename H>
cudaError_t binary_half(const void* a, const void* b, void* out, int64_t n, bool same, const IndexMap& am,
                        const IndexMap& bm, cudaStream_t s) {
  if constexpr (!half_binary_op(Op)) {
    return cudaErrorInvalidValue;
  } else {
    binary_half_kernel<Op, H><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const H*>(a), static_cast<const H*>(b),
                                                                 static_cast<H*>(out), n, same, am, bm);
    return cudaGetLastError();
  }
}

constexpr bool is_compare(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kGreater ||
         op == BinaryOp::kLessOrEqual || op == BinaryOp::kGreaterOrEqual;
}
constexpr bool is_logical(BinaryOp op) { return op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor; }

template <BinaryOp Op, typename T>
cudaError_t binary_typed(const void* a, const void* b, void* out, int64_t n, bool same, const IndexMap& am,
                         const IndexMap& bm, cudaStream_t s) {
  if constexpr (is_compare(Op) || is_logical(Op)) {
    binary_kernel<Op, T, bool><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                                  static_cast<bool*>(out), n, same, am, bm);
  } else {
    binary_kernel<Op, T, T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                               static_cast<T*>(out), n, same, am, bm);
  }
  return cudaGetLastError();
}

template <BinaryOp Op>
cudaError_t binary_dispatch(ElemType t, const void* a, const void* b, void* out, int64_t n, bool same,
                            const IndexMap& am, const IndexMap& bm, cudaStream_t s) {
  if constexpr (is_logical(Op)) {
    if (t != ElemType::kBool) return cudaErrorInvalidValue;
    return binary_typed<Op, bool>(a, b, out, n, same, am, bm, s);
  } else {
    switch (t) {
      case ElemType::kF32: return binary_typed<Op, float>(a, b, out, n, same, am, bm, s);
      case ElemType::kF64: return binary_typed<Op, double>(a, b, out, n, same, am, bm, s);
      case ElemType::kI32: return binary_typed<Op, int32_t>(a, b, out, n, same, am, bm, s);
      case ElemType::kI64: return binary_typed<Op, int64_t>(a, b, out, n, same, am, bm, s);
      case ElemType::kBool:
        if constexpr (Op == BinaryOp::kEqual) return binary_typed<Op, bool>(a, b, out, n, same, am, bm, s);
        return cudaErrorInvalidValue;
      case ElemType::kBF16: return binary_half<Op, BFloat16>(a, b, out, n, same, am, bm, s);
      case ElemType::kF16: return binary_half<Op, Float16>(a, b, out, n, same, am, bm, s);
      default: return cudaErrorInvalidValue;
    }
  }
  return cudaErrorInvalidValue;
}

template <typename T>
__global__ void where_kernel(const bool* c, const T* x, const T* y, T* out, int64_t n, IndexMap cm, IndexMap xm,
                             IndexMap ym) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = c[index_map_offset(cm, i)] ? x[index_map_offset(xm, i)] : y[index_map_offset(ym, i)];
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* in, T* out, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = unary_value<T>(op, in[i], alpha);
}

template <typename H>
__global__ void unary_half_kernel(UnaryOp op, const H* in, H* out, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = half_unary_value<H>(op, in[i], alpha);
}

template <typename T>
__global__ void clip_kernel(const T* in, T* out, int64_t n, const T* lo, const T* hi) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    T v = in[i];
    if (lo && v < *lo) v = *lo;  // max first, then min: min > max gives max everywhere
    if (hi && v > *hi) v = *hi;
    out[i] = v;
  }
}

template <typename From, typename To>
__global__ void cast_kernel(const From* in, To* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = cast_value<From, To>(in[i]);
}

template <typename From>
cudaError_t cast_to(ElemType to, const From* in, void* out, int64_t n, cudaStream_t s) {
  switch (to) {
    case ElemType::kF32: cast_kernel<From, float><<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<float*>(out), n); break;
    case ElemType::kF64: cast_kernel<From, double><<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<double*>(out), n); break;
    case ElemType::kI32: cast_kernel<From, int32_t><<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<int32_t*>(out), n); break;
    case ElemType::kI64: cast_kernel<From, int64_t><<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<int64_t*>(out), n); break;
    case ElemType::kBool: cast_kernel<From, bool><<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<bool*>(out), n); break;
    case ElemType::kF16: cast_kernel<From, Float16><<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<Float16*>(out), n); break;
    case ElemType::kBF16: cast_kernel<From, BFloat16><<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<BFloat16*>(out), n); break;
  }
  return cudaGetLastError();
}

template <typename T>
__global__ void activation_grad_kernel(ActivationGrad op, const T* dy, const T* saved, T* dx, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dx[i] = activation_grad_value<T>(op, dy[i], saved[i], alpha);
}

template <typename H>
__global__ void activation_grad_half_kernel(ActivationGrad op, const H* dy, const H* saved, H* dx, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dx[i] = half_activation_grad_value<H>(op, dy[i], saved[i], alpha);
}

}  // namespace

cudaError_t launch_binary(BinaryOp op, ElemType t, const void* a, const void* b, void* out, int64_t n, bool same_shape,
                          const IndexMap& am, const IndexMap& bm, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (op) {
#define ORT_BINARY_CASE(name) \
  case BinaryOp::name: return binary_dispatch<BinaryOp::name>(t, a, b, out, n, same_shape, am, bm, s);
    ORT_BINARY_CASE(kAdd) ORT_BINARY_CASE(kSub) ORT_BINARY_CASE(kMul) ORT_BINARY_CASE(kDiv) ORT_BINARY_CASE(kPow)
    ORT_BINARY_CASE(kMax) ORT_BINARY_CASE(kMin) ORT_BINARY_CASE(kEqual) ORT_BINARY_CASE(kLess)
    ORT_BINARY_CASE(kGreater) ORT_BINARY_CASE(kLessOrEqual) ORT_BINARY_CASE(kGreaterOrEqual) ORT_BINARY_CASE(kAnd)
    ORT_BINARY_CASE(kOr) ORT_BINARY_CASE(kXor) ORT_BINARY_CASE(kMod) ORT_BINARY_CASE(kFmod) ORT_BINARY_CASE(kPRelu)
#undef ORT_BINARY_CASE
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_where(const bool* cond, const void* x, const void* y, void* out, int element_bytes, int64_t n,
                         const IndexMap& cm, const IndexMap& xm, const IndexMap& ym, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (element_bytes) {
    case 1: where_kernel<<<blocks_for(n), kThreads, 0, s>>>(cond, static_cast<const uint8_t*>(x), static_cast<const uint8_t*>(y), static_cast<uint8_t*>(out), n, cm, xm, ym); break;
    case 4: where_kernel<<<blocks_for(n), kThreads, 0, s>>>(cond, static_cast<const uint32_t*>(x), static_cast<const uint32_t*>(y), static_cast<uint32_t*>(out), n, cm, xm, ym); break;
    case 8: where_kernel<<<blocks_for(n), kThreads, 0, s>>>(cond, static_cast<const uint64_t*>(x), static_cast<const uint64_t*>(y), static_cast<uint64_t*>(out), n, cm, xm, ym); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_unary(UnaryOp op, ElemType t, const void* in, void* out, int64_t n, float alpha, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: unary_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const float*>(in), static_cast<float*>(out), n, alpha); break;
    case ElemType::kF64: unary_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const double*>(in), static_cast<double*>(out), n, alpha); break;
    case ElemType::kI32: unary_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const int32_t*>(in), static_cast<int32_t*>(out), n, alpha); break;
    case ElemType::kI64: unary_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const int64_t*>(in), static_cast<int64_t*>(out), n, alpha); break;
    case ElemType::kBool: unary_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const bool*>(in), static_cast<bool*>(out), n, alpha); break;
    case ElemType::kBF16: unary_half_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const BFloat16*>(in), static_cast<BFloat16*>(out), n, alpha); break;
    case ElemType::kF16: unary_half_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const Float16*>(in), static_cast<Float16*>(out), n, alpha); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_clip(ElemType t, const void* in, void* out, int64_t n, const void* lo, const void* hi, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32: clip_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(in), static_cast<float*>(out), n, static_cast<const float*>(lo), static_cast<const float*>(hi)); break;
    case ElemType::kF64: clip_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const double*>(in), static_cast<double*>(out), n, static_cast<const double*>(lo), static_cast<const double*>(hi)); break;
    case ElemType::kI32: clip_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int32_t*>(in), static_cast<int32_t*>(out), n, static_cast<const int32_t*>(lo), static_cast<const int32_t*>(hi)); break;
    case ElemType::kI64: clip_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int64_t*>(in), static_cast<int64_t*>(out), n, static_cast<const int64_t*>(lo), static_cast<const int64_t*>(hi)); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_cast(ElemType from, ElemType to, const void* in, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (from) {
    case ElemType::kF32: return cast_to(to, static_cast<const float*>(in), out, n, s);
    case ElemType::kF64: return cast_to(to, static_cast<const double*>(in), out, n, s);
    case ElemType::kI32: return cast_to(to, static_cast<const int32_t*>(in), out, n, s);
    case ElemType::kI64: return cast_to(to, static_cast<const int64_t*>(in), out, n, s);
    case ElemType::kBool: return cast_to(to, static_cast<const bool*>(in), out, n, s);
    case ElemType::kF16: return cast_to(to, static_cast<const Float16*>(in), out, n, s);
    case ElemType::kBF16: return cast_to(to, static_cast<const BFloat16*>(in), out, n, s);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_activation_grad(ActivationGrad op, ElemType t, const void* dy, const void* saved, void* dx, int64_t n,
                                   float alpha, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (t == ElemType::kF32)
    activation_grad_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const float*>(dy), static_cast<const float*>(saved), static_cast<float*>(dx), n, alpha);
  else if (t == ElemType::kF64)
    activation_grad_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const double*>(dy), static_cast<const double*>(saved), static_cast<double*>(dx), n, alpha);
  else if (t == ElemType::kBF16)
    activation_grad_half_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const BFloat16*>(dy), static_cast<const BFloat16*>(saved), static_cast<BFloat16*>(dx), n, alpha);
  else if (t == ElemType::kF16)
    activation_grad_half_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const Float16*>(dy), static_cast<const Float16*>(saved), static_cast<Float16*>(dx), n, alpha);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
