// The arithmetic of the parameterised activations and the inverse/hyperbolic
// trigonometric functions: one element of the forward and of its derivative.
// The CPU kernels (runtime/cpu/kernels/activations.cc) and the CUDA kernels
// (cuda_kernels/activations.cu) both call these, so the GPU computes what the
// CPU computes, and the host tests check the one function.
//
// Derivatives are taken at the forward's input X, and at a kink they take the
// side PyTorch's backward takes (HardSwish's x <= 3 branch, Elu's x <= 0).
#pragma once
#include <cmath>
#include <type_traits>

#include "numerics/host_device.h"

namespace ort_train {

enum class Activation : int {
  kHardSigmoid,      // max(0, min(1, alpha x + beta))
  kHardSwish,        // x HardSigmoid(x) with alpha 1/6, beta 1/2
  kElu,              // x > 0 ? x : alpha (e^x - 1)
  kSelu,             // gamma (x > 0 ? x : alpha (e^x - 1))
  kCelu,             // max(0, x) + min(0, alpha (e^(x/alpha) - 1))
  kThresholdedRelu,  // x > alpha ? x : 0
  kShrink,           // x < -lambd ? x + bias : x > lambd ? x - bias : 0   (alpha = lambd, beta = bias)
  kSoftsign,         // x / (1 + |x|)
  kMish,             // x tanh(softplus(x))
  kTan, kSinh, kCosh, kAsin, kAcos, kAsinh, kAcosh, kAtanh
};

// The attributes an activation reads (ONNX's names in the comments above);
// gamma is Selu's only.
struct ActivationParams {
  float alpha = 0.f;
  float beta = 0.f;
  float gamma = 0.f;
};

namespace activation_detail {
// Float arithmetic for float (and 16-bit) elements, double for double and integers.
template <typename T>
using Compute = typename std::conditional<std::is_same<T, float>::value, float, double>::type;

template <typename F>
ORT_HOST_DEVICE F softplus(F x) {
#ifndef __CUDA_ARCH__
  using std::exp; using std::log1p;
#endif
  return x > F(0) ? x + log1p(exp(-x)) : log1p(exp(x));
}
}  // namespace activation_detail

template <typename T>
ORT_HOST_DEVICE T activation_value(Activation op, T v, const ActivationParams& p) {
#ifndef __CUDA_ARCH__
  using std::acos; using std::acosh; using std::asin; using std::asinh; using std::atanh; using std::cosh;
  using std::exp; using std::expm1; using std::fabs; using std::sinh; using std::tan; using std::tanh;
#endif
  using F = activation_detail::Compute<T>;
  const F x = static_cast<F>(v), a = static_cast<F>(p.alpha), b = static_cast<F>(p.beta);
  switch (op) {
    case Activation::kHardSigmoid: {
      F y = a * x + b;
      return static_cast<T>(y < F(0) ? F(0) : (y > F(1) ? F(1) : y));
    }
    case Activation::kHardSwish: {
      F y = x / F(6) + F(0.5);
      return static_cast<T>(x * (y < F(0) ? F(0) : (y > F(1) ? F(1) : y)));
    }
    case Activation::kElu: return static_cast<T>(x > F(0) ? x : a * expm1(x));
    case Activation::kSelu: return static_cast<T>(static_cast<F>(p.gamma) * (x > F(0) ? x : a * expm1(x)));
    case Activation::kCelu: return static_cast<T>(x > F(0) ? x : a * expm1(x / a));
    case Activation::kThresholdedRelu: return x > a ? v : T(0);
    case Activation::kShrink: return static_cast<T>(x < -a ? x + b : (x > a ? x - b : F(0)));
    case Activation::kSoftsign: return static_cast<T>(x / (F(1) + fabs(x)));
    case Activation::kMish: return static_cast<T>(x * tanh(activation_detail::softplus(x)));
    case Activation::kTan: return static_cast<T>(tan(x));
    case Activation::kSinh: return static_cast<T>(sinh(x));
    case Activation::kCosh: return static_cast<T>(cosh(x));
    case Activation::kAsin: return static_cast<T>(asin(x));
    case Activation::kAcos: return static_cast<T>(acos(x));
    case Activation::kAsinh: return static_cast<T>(asinh(x));
    case Activation::kAcosh: return static_cast<T>(acosh(x));
    case Activation::kAtanh: return static_cast<T>(atanh(x));
  }
  return v;
}

// d activation / dx at x.
template <typename T>
ORT_HOST_DEVICE T activation_derivative(Activation op, T v, const ActivationParams& p) {
#ifndef __CUDA_ARCH__
  using std::cos; using std::cosh; using std::exp; using std::fabs; using std::sinh; using std::sqrt; using std::tanh;
#endif
  using F = activation_detail::Compute<T>;
  const F x = static_cast<F>(v), a = static_cast<F>(p.alpha), b = static_cast<F>(p.beta);
  F d = F(0);
  switch (op) {
    case Activation::kHardSigmoid: {
      F y = a * x + b;
      d = y > F(0) && y < F(1) ? a : F(0);
      break;
    }
    case Activation::kHardSwish: d = x < F(-3) ? F(0) : (x <= F(3) ? x / F(3) + F(0.5) : F(1)); break;
    case Activation::kElu: d = x > F(0) ? F(1) : a * exp(x); break;
    case Activation::kSelu: d = static_cast<F>(p.gamma) * (x > F(0) ? F(1) : a * exp(x)); break;
    case Activation::kCelu: d = x > F(0) ? F(1) : exp(x / a); break;
    case Activation::kThresholdedRelu: d = x > a ? F(1) : F(0); break;
    case Activation::kShrink: d = x < -a || x > a ? F(1) : F(0); break;
    case Activation::kSoftsign: {
      F s = F(1) + fabs(x);
      d = F(1) / (s * s);
      break;
    }
    case Activation::kMish: {
      F t = tanh(activation_detail::softplus(x));
      F sig = x >= F(0) ? F(1) / (F(1) + exp(-x)) : exp(x) / (F(1) + exp(x));
      d = t + x * sig * (F(1) - t * t);
      break;
    }
    case Activation::kTan: {
      F c = cos(x);
      d = F(1) / (c * c);
      break;
    }
    case Activation::kSinh: d = cosh(x); break;
    case Activation::kCosh: d = sinh(x); break;
    case Activation::kAsin: d = F(1) / sqrt(F(1) - x * x); break;
    case Activation::kAcos: d = F(-1) / sqrt(F(1) - x * x); break;
    case Activation::kAsinh: d = F(1) / sqrt(x * x + F(1)); break;
    case Activation::kAcosh: d = F(1) / sqrt(x * x - F(1)); break;
    case Activation::kAtanh: d = F(1) / (F(1) - x * x); break;
  }
  (void)b;
  return static_cast<T>(d);
}

// PRelu: x where x >= 0, slope * x elsewhere.
template <typename T>
ORT_HOST_DEVICE T prelu_value(T x, T slope) {
  return x < T(0) ? static_cast<T>(slope * x) : x;
}

// Whether the activation also runs on integer elements (ONNX allows it for Shrink only).
constexpr bool activation_takes_integers(Activation op) { return op == Activation::kShrink; }

}  // namespace ort_train
