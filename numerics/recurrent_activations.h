// The activations ONNX's RNN, GRU and LSTM accept in their `activations`
// attribute, one element of each and of its derivative at the pre-activation
// x. The recurrent kernels keep pre-activations (graph/ops/recurrent.h's
// saved state), so every derivative is taken from x.
#pragma once
#include <cmath>

#include "numerics/host_device.h"

namespace ort_train {

enum class RnnActivation : int {
  kSigmoid, kTanh, kRelu, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus
};

struct RnnActivationFn {
  RnnActivation kind = RnnActivation::kTanh;
  float alpha = 0.f;
  float beta = 0.f;
};

template <typename T>
ORT_HOST_DEVICE T rnn_activation(const RnnActivationFn& f, T x) {
#ifndef __CUDA_ARCH__
  using std::exp; using std::fabs; using std::log1p; using std::tanh;
#endif
  const T a = static_cast<T>(f.alpha), b = static_cast<T>(f.beta);
  switch (f.kind) {
    case RnnActivation::kSigmoid: return x >= T(0) ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x));
    case RnnActivation::kTanh: return tanh(x);
    case RnnActivation::kRelu: return x > T(0) ? x : T(0);
    case RnnActivation::kAffine: return a * x + b;
    case RnnActivation::kLeakyRelu: return x >= T(0) ? x : a * x;
    case RnnActivation::kThresholdedRelu: return x > a ? x : T(0);
    case RnnActivation::kScaledTanh: return a * tanh(b * x);
    case RnnActivation::kHardSigmoid: {
      T y = a * x + b;
      return y < T(0) ? T(0) : (y > T(1) ? T(1) : y);
    }
    case RnnActivation::kElu: return x > T(0) ? x : a * (exp(x) - T(1));
    case RnnActivation::kSoftsign: return x / (T(1) + fabs(x));
    case RnnActivation::kSoftplus: return x > T(0) ? x + log1p(exp(-x)) : log1p(exp(x));
  }
  return x;
}

template <typename T>
ORT_HOST_DEVICE T rnn_activation_derivative(const RnnActivationFn& f, T x) {
#ifndef __CUDA_ARCH__
  using std::exp; using std::fabs; using std::tanh;
#endif
  const T a = static_cast<T>(f.alpha), b = static_cast<T>(f.beta);
  switch (f.kind) {
    case RnnActivation::kSigmoid: {
      T s = rnn_activation(f, x);
      return s * (T(1) - s);
    }
    case RnnActivation::kTanh: {
      T t = tanh(x);
      return T(1) - t * t;
    }
    case RnnActivation::kRelu: return x > T(0) ? T(1) : T(0);
    case RnnActivation::kAffine: return a;
    case RnnActivation::kLeakyRelu: return x >= T(0) ? T(1) : a;
    case RnnActivation::kThresholdedRelu: return x > a ? T(1) : T(0);
    case RnnActivation::kScaledTanh: {
      T t = tanh(b * x);
      return a * b * (T(1) - t * t);
    }
    case RnnActivation::kHardSigmoid: {
      T y = a * x + b;
      return y > T(0) && y < T(1) ? a : T(0);
    }
    case RnnActivation::kElu: return x > T(0) ? T(1) : a * exp(x);
    case RnnActivation::kSoftsign: {
      T s = T(1) + fabs(x);
      return T(1) / (s * s);
    }
    case RnnActivation::kSoftplus: return x >= T(0) ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x));
  }
  return T(1);
}

}  // namespace ort_train
