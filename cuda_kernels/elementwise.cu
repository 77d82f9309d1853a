#include <cmath>

#include "cuda_kernels/elementwise.h"

namespace ort_train::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 1048576 ? 1048576 : b));
}

template <typename T> __device__ T pow_op(T a, T b) { return static_cast<T>(pow(static_cast<double>(a), static_cast<double>(b))); }
__device__ float pow_op(float a, float b) { return powf(a, b); }

template <BinaryOp Op, typename T, typename R>
__device__ __forceinline__ R apply_binary(T a, T b) {
  if constexpr (Op == BinaryOp::kAdd) return a + b;
  else if constexpr (Op == BinaryOp::kSub) return a - b;
  else if constexpr (Op == BinaryOp::kMul) return a * b;
  else if constexpr (Op == BinaryOp::kDiv) return a / b;
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
__device__ __forceinline__ T apply_unary(UnaryOp op, T v, float alpha) {
  using F = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
  F x = static_cast<F>(v);
  switch (op) {
    case UnaryOp::kNeg: return -v;
    case UnaryOp::kAbs: return v < T(0) ? T(-v) : v;
    case UnaryOp::kRelu: return v > T(0) ? v : T(0);
    case UnaryOp::kSign: return static_cast<T>(v > T(0) ? 1 : (v < T(0) ? -1 : 0));
    case UnaryOp::kExp: return static_cast<T>(exp(x));
    case UnaryOp::kLog: return static_cast<T>(log(x));
    case UnaryOp::kSqrt: return static_cast<T>(sqrt(x));
    case UnaryOp::kReciprocal: return static_cast<T>(F(1) / x);
    case UnaryOp::kSigmoid: return static_cast<T>(x >= F(0) ? F(1) / (F(1) + exp(-x)) : exp(x) / (F(1) + exp(x)));
    case UnaryOp::kTanh: return static_cast<T>(tanh(x));
    case UnaryOp::kErf: return static_cast<T>(erf(x));
    case UnaryOp::kGelu: return static_cast<T>(F(0.5) * x * (F(1) + erf(x * F(0.7071067811865476))));
    case UnaryOp::kGeluTanh:
      return static_cast<T>(F(0.5) * x * (F(1) + tanh(F(0.7978845608028654) * (x + F(0.044715) * x * x * x))));
    case UnaryOp::kSoftplus: return static_cast<T>(x > F(0) ? x + log1p(exp(-x)) : log1p(exp(x)));
    case UnaryOp::kSin: return static_cast<T>(sin(x));
    case UnaryOp::kCos: return static_cast<T>(cos(x));
    case UnaryOp::kAtan: return static_cast<T>(atan(x));
    case UnaryOp::kFloor: return static_cast<T>(floor(x));
    case UnaryOp::kCeil: return static_cast<T>(ceil(x));
    case UnaryOp::kRound: return static_cast<T>(rint(x));  // half to even
    case UnaryOp::kNot: return static_cast<T>(!v);
    case UnaryOp::kLeakyRelu: return v >= T(0) ? v : static_cast<T>(static_cast<F>(alpha) * x);
  }
  return v;
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* in, T* out, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = apply_unary<T>(op, in[i], alpha);
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
__device__ __forceinline__ To cast_value(From v) {
  if constexpr (std::is_same<To, bool>::value) {
    return v != From(0);
  } else if constexpr (std::is_floating_point<From>::value && std::is_integral<To>::value) {
    double d = static_cast<double>(v);
    if (d != d) return To(0);
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
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
  }
  return cudaGetLastError();
}

template <typename T>
__global__ void activation_grad_kernel(ActivationGrad op, const T* dy, const T* saved, T* dx, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    T g = dy[i], s = saved[i];
    switch (op) {
      case ActivationGrad::kRelu: dx[i] = s > T(0) ? g : T(0); break;
      case ActivationGrad::kSigmoid: dx[i] = g * s * (T(1) - s); break;
      case ActivationGrad::kTanh: dx[i] = g * (T(1) - s * s); break;
      case ActivationGrad::kLeakyRelu: dx[i] = s > T(0) ? g : g * static_cast<T>(alpha); break;
      case ActivationGrad::kGelu: {
        // Φ(x) + x φ(x)
        T cdf = T(0.5) * (T(1) + erf(s * T(0.7071067811865476)));
        T pdf = exp(T(-0.5) * s * s) * T(0.3989422804014327);
        dx[i] = g * (cdf + s * pdf);
        break;
      }
      case ActivationGrad::kGeluTanh: {
        const T k = T(0.7978845608028654), c = T(0.044715);
        T u = k * (s + c * s * s * s);
        T t = tanh(u);
        T du = k * (T(1) + T(3) * c * s * s);
        dx[i] = g * (T(0.5) * (T(1) + t) + T(0.5) * s * (T(1) - t * t) * du);
        break;
      }
    }
  }
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
    ORT_BINARY_CASE(kOr) ORT_BINARY_CASE(kXor)
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
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
