// Elementwise ops: binary with numpy broadcasting, Where, unary math and
// activations, their gradients, Cast and Clip.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

enum class BinaryOp : int {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin,
  kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual,  // bool outputs
  kAnd, kOr, kXor,                                         // bool inputs and outputs
  kMod, kFmod,                                             // Mod, fmod = 0 and 1 (numerics/modulo.h)
  kPRelu                                                   // a < 0 ? b a : a (b the slope)
};
// out (n elements, the broadcast shape) = a op b; `a_map`/`b_map` give each
// operand's offset for an output index (ignored when `same_shape`).
cudaError_t launch_binary(BinaryOp op, ElemType t, const void* a, const void* b, void* out, int64_t n, bool same_shape,
                          const IndexMap& a_map, const IndexMap& b_map, cudaStream_t stream);
// out = cond ? x : y with broadcasting (element type of x/y by size in bytes).
cudaError_t launch_where(const bool* cond, const void* x, const void* y, void* out, int element_bytes, int64_t n,
                         const IndexMap& c_map, const IndexMap& x_map, const IndexMap& y_map, cudaStream_t stream);

enum class UnaryOp : int {
  kNeg, kAbs, kExp, kLog, kSqrt, kReciprocal, kRelu, kSigmoid, kTanh, kErf, kGelu, kGeluTanh, kSoftplus,
  kSin, kCos, kAtan, kFloor, kCeil, kRound, kSign, kNot, kLeakyRelu, kSilu
};
cudaError_t launch_unary(UnaryOp op, ElemType t, const void* in, void* out, int64_t n, float alpha,
                         cudaStream_t stream);

// One element of a unary op (the kernel's arithmetic; the host tests run it too).
template <typename T>
ORT_HOST_DEVICE T unary_value(UnaryOp op, T v, float alpha) {
#ifndef __CUDA_ARCH__
  using std::atan; using std::ceil; using std::cos; using std::erf; using std::exp; using std::floor;
  using std::log; using std::log1p; using std::rint; using std::sin; using std::sqrt; using std::tanh;
#endif
  using F = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
  F x = static_cast<F>(v);
  switch (op) {
    case UnaryOp::kNeg: return static_cast<T>(-v);
    case UnaryOp::kAbs: return v < T(0) ? static_cast<T>(-v) : v;
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
    case UnaryOp::kSilu:  // x * sigmoid(x), split by sign so exp never overflows
      return static_cast<T>(x >= F(0) ? x / (F(1) + exp(-x)) : x * exp(x) / (F(1) + exp(x)));
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
// Clip with optional device scalars for the bounds (null: unbounded on that side).
cudaError_t launch_clip(ElemType t, const void* in, void* out, int64_t n, const void* lo, const void* hi,
                        cudaStream_t stream);
cudaError_t launch_cast(ElemType from, ElemType to, const void* in, void* out, int64_t n, cudaStream_t stream);

enum class ActivationGrad : int { kRelu, kSigmoid, kTanh, kGelu, kGeluTanh, kLeakyRelu, kSilu };
// dX from dY and the forward's Y (Relu, Sigmoid, Tanh) or X (Gelu, LeakyRelu, Silu).
cudaError_t launch_activation_grad(ActivationGrad op, ElemType t, const void* dy, const void* saved, void* dx,
                                   int64_t n, float alpha, cudaStream_t stream);

// One element of an activation gradient from dY (g) and the saved Y or X (s).
template <typename T>
ORT_HOST_DEVICE T activation_grad_value(ActivationGrad op, T g, T s, float alpha) {
#ifndef __CUDA_ARCH__
  using std::erf; using std::exp; using std::tanh;
#endif
  switch (op) {
    case ActivationGrad::kRelu: return s > T(0) ? g : T(0);
    case ActivationGrad::kSigmoid: return g * s * (T(1) - s);
    case ActivationGrad::kTanh: return g * (T(1) - s * s);
    case ActivationGrad::kLeakyRelu: return s > T(0) ? g : g * static_cast<T>(alpha);
    case ActivationGrad::kSilu: {  // σ(x) (1 + x (1 - σ(x)))
      T sig = s >= T(0) ? T(1) / (T(1) + exp(-s)) : exp(s) / (T(1) + exp(s));
      return g * sig * (T(1) + s * (T(1) - sig));
    }
    case ActivationGrad::kGelu: {  // Φ(x) + x φ(x)
      T cdf = T(0.5) * (T(1) + erf(s * T(0.7071067811865476)));
      T pdf = exp(T(-0.5) * s * s) * T(0.3989422804014327);
      return g * (cdf + s * pdf);
    }
    case ActivationGrad::kGeluTanh: {
      const T k = T(0.7978845608028654), c = T(0.044715);
      T t = tanh(k * (s + c * s * s * s));
      T du = k * (T(1) + T(3) * c * s * s);
      return g * (T(0.5) * (T(1) + t) + T(0.5) * s * (T(1) - t * t) * du);
    }
  }
  return g;
}

// 16-bit elements (bfloat16, float16; H is numerics/float16.h's type): widened,
// computed as float32, rounded once. The CPU's 16-bit kernels compute the same
// (runtime/cpu/kernels/half_twins.cc); the host tests compare the two.
template <typename H>
ORT_HOST_DEVICE H half_unary_value(UnaryOp op, H v, float alpha) {
  return H(unary_value<float>(op, static_cast<float>(v), alpha));
}
template <typename H>
ORT_HOST_DEVICE H half_activation_grad_value(ActivationGrad op, H g, H s, float alpha) {
  return H(activation_grad_value<float>(op, static_cast<float>(g), static_cast<float>(s), alpha));
}
// The arithmetic ops in 16 bits: Add, Sub, Mul, Div (others are refused).
ORT_HOST_DEVICE constexpr bool half_binary_op(BinaryOp op) {
  return op == BinaryOp::kAdd || op == BinaryOp::kSub || op == BinaryOp::kMul || op == BinaryOp::kDiv;
}
template <typename H>
ORT_HOST_DEVICE H half_binary_value(BinaryOp op, H a, H b) {
  float x = static_cast<float>(a), y = static_cast<float>(b);
  switch (op) {
    case BinaryOp::kAdd: return H(x + y);
    case BinaryOp::kSub: return H(x - y);
    case BinaryOp::kMul: return H(x * y);
    default: return H(x / y);
  }
}

}  // namespace ort_train::cuda
