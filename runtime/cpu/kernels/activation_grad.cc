// CPU kernels of the activation gradient ops: one pass over (dY, Y or X).
//   ReluGrad(dY, Y)            dY * (Y > 0)
//   SigmoidGrad(dY, Y)         dY * Y * (1 - Y)
//   TanhGrad(dY, Y)            dY * (1 - Y^2)
//   GeluGrad(dY, X)            dY * d/dx gelu(x), attribute approximate = none | tanh
//   BiasGeluGrad(dY, X, B)     GeluGrad at X + B, B 1-D along X's last dim
//   LeakyReluGrad(dY, X)       dY * (X > 0 ? 1 : alpha)
//   SiluGrad(dY, X)            dY * sigmoid(X) * (1 + X * (1 - sigmoid(X)))
#include <algorithm>
#include <cmath>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/vector_math.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename Op>
KernelFn binary_grad(Op op) {
  return [op](KernelContext& ctx) -> Status {
    const Tensor& dy = ctx.input(0);
    const Tensor& y = ctx.input(1);
    if (y.dims() != dy.dims())
      return shape_error("{}: dY and its second input differ in shape", ctx.node().describe());
    bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
      const T* g = dy.data<T>();
      const T* v = y.data<T>();
      T* o = ctx.output(0).data<T>();
      parallel_for(dy.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = op(g[i], v[i], ctx.node());
      });
    });
    return ok ? Status::Ok() : unsupported_dtype(ctx, dy.dtype());
  };
}

struct ReluGrad {
  template <typename T> T operator()(T g, T y, const Node&) const { return y > T(0) ? g : T(0); }
};
struct SigmoidGrad {
  template <typename T> T operator()(T g, T y, const Node&) const { return g * y * (T(1) - y); }
};
struct TanhGrad {
  template <typename T> T operator()(T g, T y, const Node&) const { return g * (T(1) - y * y); }
};
struct LeakyReluGrad {
  template <typename T> T operator()(T g, T x, const Node& n) const {
    return x > T(0) ? g : g * static_cast<T>(n.attr_float("alpha", 0.01f));
  }
};

struct SiluGrad {
  template <typename T> T operator()(T g, T x, const Node&) const {
    T sig = x >= T(0) ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
    return g * sig * (T(1) + x * (T(1) - sig));
  }
};

// SiluGrad on float32: sigmoid vectorized per block, then the product.
Status silu_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (dy.dtype() != DType::kFloat || x.dims() != dy.dims()) return binary_grad(SiluGrad{})(ctx);
  const float* g = dy.data<float>();
  const float* v = x.data<float>();
  float* o = ctx.output(0).data<float>();
  parallel_for(dy.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    constexpr int64_t kBlock = 512;
    float sig[kBlock];
    for (int64_t s = b; s < e; s += kBlock) {
      const int64_t m = std::min(kBlock, e - s);
      sigmoid_f32(v + s, sig, m);
      for (int64_t i = 0; i < m; ++i) o[s + i] = g[s + i] * sig[i] * (1.f + v[s + i] * (1.f - sig[i]));
    }
  });
  return Status::Ok();
}

// d/dx gelu(x), in double (float64 inputs; float32 takes gelu_grad_f32): the
// erf form, or the tanh form's when `tanh_form`.
double gelu_derivative(double x, bool tanh_form) {
  if (tanh_form) {
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    double t = std::tanh(k * (x + c * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
  }
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}

Status gelu_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  bool tanh_form = ctx.node().attr_string("approximate", "none") == "tanh";
  if (dy.dtype() == DType::kFloat) {  // vectorized, in float (runtime/cpu/vector_math.h)
    const float* g = dy.data<float>();
    const float* v = x.data<float>();
    float* o = ctx.output(0).data<float>();
    parallel_for(dy.numel(), kElementwiseGrain,
                 [&](int64_t b, int64_t e) { gelu_grad_f32(g + b, v + b, nullptr, 0, o + b, e - b, tanh_form); });
    return Status::Ok();
  }
  bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
    const T* g = dy.data<T>();
    const T* v = x.data<T>();
    T* o = ctx.output(0).data<T>();
    parallel_for(dy.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        o[i] = static_cast<T>(static_cast<double>(g[i]) * gelu_derivative(static_cast<double>(v[i]), tanh_form));
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dy.dtype());
}

// BiasGeluGrad(dY, X, B): GeluGrad at X + B (the bias along X's last dim),
// the sum formed in X's type as the forward's Add formed it.
Status bias_gelu_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  bool tanh_form = ctx.node().attr_string("approximate", "none") == "tanh";
  if (x.dims() != dy.dims() || x.dims().empty() || bias.dims().size() != 1 || bias.dims()[0] != x.dims().back())
    return shape_error("{}: BiasGeluGrad needs dY and X of one shape and a 1-D bias of its last dim",
                       ctx.node().describe());
  const int64_t n = x.dims().back();
  if (n == 0) return Status::Ok();
  if (dy.dtype() == DType::kFloat) {
    const float* g = dy.data<float>();
    const float* v = x.data<float>();
    const float* pb = bias.data<float>();
    float* o = ctx.output(0).data<float>();
    parallel_for(dy.numel() / n, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t rb, int64_t re) {
      gelu_grad_f32(g + rb * n, v + rb * n, pb, n, o + rb * n, (re - rb) * n, tanh_form);
    });
    return Status::Ok();
  }
  bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
    const T* g = dy.data<T>();
    const T* v = x.data<T>();
    const T* pb = bias.data<T>();
    T* o = ctx.output(0).data<T>();
    parallel_for(dy.numel() / n, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r)
        for (int64_t j = 0; j < n; ++j) {
          T sum = static_cast<T>(v[r * n + j] + pb[j]);
          o[r * n + j] = static_cast<T>(static_cast<double>(g[r * n + j]) *
                                        gelu_derivative(static_cast<double>(sum), tanh_form));
        }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dy.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "ReluGrad", 1, 1000, DeviceKind::kCpu, binary_grad(ReluGrad{}));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "SigmoidGrad", 1, 1000, DeviceKind::kCpu, binary_grad(SigmoidGrad{}));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "TanhGrad", 1, 1000, DeviceKind::kCpu, binary_grad(TanhGrad{}));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "LeakyReluGrad", 1, 1000, DeviceKind::kCpu, binary_grad(LeakyReluGrad{}));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "GeluGrad", 1, 1000, DeviceKind::kCpu, gelu_grad);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "BiasGeluGrad", 1, 1000, DeviceKind::kCpu, bias_gelu_grad);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "SiluGrad", 1, 1000, DeviceKind::kCpu, silu_grad);

}  // namespace ort_train
