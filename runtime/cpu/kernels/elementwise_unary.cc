// CPU kernels: unary math and activations (float/double; Neg/Abs/Relu/Clip on
// integers too), Cast, and Not.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "numerics/cast_value.h"  // one element of Cast, shared with the CUDA kernel
#include "graph/dispatch.h"
#include "runtime/cpu/half_convert.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/vector_math.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename T, typename Op>
void map(const Tensor& x, Tensor& out, Op op) {
  const T* p = x.data<T>();
  T* o = out.data<T>();
  parallel_for(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = op(p[i]);
  });
}

// Float-only ops (transcendental functions).
template <typename Op>
KernelFn float_unary(Op op) {
  return [op](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    bool ok = dispatch_float(x.dtype(), [&]<typename T>() { map<T>(x, ctx.output(0), [&](T v) { return op(v); }); });
    return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
  };
}

// Float-only ops with a vectorized float32 body (runtime/cpu/vector_math.h):
// `vec` on float chunks, `op` on double.
template <typename Op>
KernelFn vector_unary(Op op, void (*vec)(const float*, float*, int64_t)) {
  return [op, vec](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == DType::kFloat) {
      const float* p = x.data<float>();
      float* o = ctx.output(0).data<float>();
      parallel_for(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) { vec(p + b, o + b, e - b); });
      return Status::Ok();
    }
    bool ok = dispatch_float(x.dtype(), [&]<typename T>() { map<T>(x, ctx.output(0), [&](T v) { return op(v); }); });
    return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
  };
}

// Ops that also make sense on integers.
template <typename Op>
KernelFn numeric_unary(Op op) {
  return [op](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    bool ok = dispatch_numeric(x.dtype(), [&]<typename T>() { map<T>(x, ctx.output(0), [&](T v) { return op(v); }); });
    return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
  };
}

struct Sqrt { template <typename T> T operator()(T v) const { return std::sqrt(v); } };
struct Exp { template <typename T> T operator()(T v) const { return std::exp(v); } };
struct Log { template <typename T> T operator()(T v) const { return std::log(v); } };
struct Reciprocal { template <typename T> T operator()(T v) const { return T(1) / v; } };
struct Sin { template <typename T> T operator()(T v) const { return std::sin(v); } };
struct Cos { template <typename T> T operator()(T v) const { return std::cos(v); } };
struct Sigmoid {
  // Split by sign so exp never overflows.
  template <typename T> T operator()(T v) const {
    if (v >= 0) return T(1) / (T(1) + std::exp(-v));
    T e = std::exp(v);
    return e / (T(1) + e);
  }
};
// SiLU (Swish), x * sigmoid(x): silu_fusion's com.ort_train op.
struct Silu {
  template <typename T> T operator()(T v) const { return v * Sigmoid{}(v); }
};
struct Tanh { template <typename T> T operator()(T v) const { return std::tanh(v); } };
struct Erf { template <typename T> T operator()(T v) const { return std::erf(v); } };
// log(1 + e^x) without overflow for large x or underflow for very negative x.
struct Softplus {
  template <typename T> T operator()(T v) const { return std::max(v, T(0)) + std::log1p(std::exp(-std::abs(v))); }
};
struct Atan { template <typename T> T operator()(T v) const { return std::atan(v); } };
struct Floor { template <typename T> T operator()(T v) const { return std::floor(v); } };
struct Ceil { template <typename T> T operator()(T v) const { return std::ceil(v); } };
// Round half to even (ONNX, numpy): nearbyint under the default rounding mode.
struct Round { template <typename T> T operator()(T v) const { return std::nearbyint(v); } };
// Sign of integers and floats; NaN stays NaN.
struct Sign {
  template <typename T> T operator()(T v) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (v != v) return v;
    }
    return v > T(0) ? T(1) : (v < T(0) ? static_cast<T>(-1) : T(0));
  }
};
// Integer negation in unsigned arithmetic: the lowest value wraps to itself
// (as numpy does) instead of being signed overflow, which C++ leaves undefined.
template <typename T>
T wrapping_neg(T v) {
  if constexpr (std::is_floating_point_v<T>) return -v;
  else return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(v));
}
struct Neg { template <typename T> T operator()(T v) const { return wrapping_neg(v); } };
struct Abs {
  template <typename T> T operator()(T v) const {
    if constexpr (std::is_unsigned_v<T>) return v;
    else return v < T(0) ? wrapping_neg(v) : v;
  }
};
// Written so NaN passes through, as max(x, 0) does in numpy and PyTorch.
struct Relu { template <typename T> T operator()(T v) const { return v < T(0) ? T(0) : v; } };

Status leaky_relu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  double alpha = ctx.node().attr_float("alpha", 0.01f);
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    T a = static_cast<T>(alpha);
    map<T>(x, ctx.output(0), [a](T v) { return v >= T(0) ? v : a * v; });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

// GELU of one element: the exact (erf) form, or the tanh form when `tanh_form`.
template <typename T>
T gelu_of(T v, bool tanh_form) {
  if (tanh_form) {
    const T k = static_cast<T>(0.7978845608028654);  // sqrt(2/pi)
    return T(0.5) * v * (T(1) + std::tanh(k * (v + T(0.044715) * v * v * v)));
  }
  const T r = static_cast<T>(0.7071067811865476);  // 1/sqrt(2)
  return T(0.5) * v * (T(1) + std::erf(v * r));
}

Result<bool> gelu_tanh_form(const KernelContext& ctx) {
  std::string approx = ctx.node().attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return invalid_argument("{}: approximate must be 'none' or 'tanh', got '{}'", ctx.node().describe(), approx);
  return approx == "tanh";
}

Status gelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(bool tanh_form, gelu_tanh_form(ctx));
  if (x.dtype() == DType::kFloat) {
    const float* p = x.data<float>();
    float* o = ctx.output(0).data<float>();
    parallel_for(x.numel(), kElementwiseGrain,
                 [&](int64_t b, int64_t e) { gelu_f32(p + b, nullptr, 0, o + b, e - b, tanh_form); });
    return Status::Ok();
  }
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    map<T>(x, ctx.output(0), [tanh_form](T v) { return gelu_of(v, tanh_form); });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

// bias_gelu_fusion's BiasGelu(X, B): each row of X plus the 1-D bias, then
// GELU, in one pass: the Add's float sum and Gelu's arithmetic, so exactly
// the pair's values.
Status bias_gelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& b = ctx.input(1);
  ASSIGN_OR_RETURN(bool tanh_form, gelu_tanh_form(ctx));
  if (x.dims().empty() || b.dtype() != x.dtype() || b.dims().size() != 1 || b.dims()[0] != x.dims().back())
    return invalid_argument("{}: BiasGelu needs a 1-D bias of X's dtype and last dim", ctx.node().describe());
  const int64_t n = x.dims().back();
  if (n == 0) return Status::Ok();
  if (x.dtype() == DType::kFloat) {
    const float* p = x.data<float>();
    const float* pb = b.data<float>();
    float* o = ctx.output(0).data<float>();
    parallel_for(x.numel() / n, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t rb, int64_t re) {
      gelu_f32(p + rb * n, pb, n, o + rb * n, (re - rb) * n, tanh_form);
    });
    return Status::Ok();
  }
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    const T* pb = b.data<T>();
    T* o = ctx.output(0).data<T>();
    parallel_for(x.numel() / n, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r)
        for (int64_t j = 0; j < n; ++j) o[r * n + j] = gelu_of(static_cast<T>(p[r * n + j] + pb[j]), tanh_form);
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

Status clip(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (ctx.opset() < 11 && !dtype_is_float(x.dtype())) return unsupported_dtype(ctx, x.dtype());
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor& bound = ctx.input(i);
    if (bound.dtype() != x.dtype())
      return invalid_argument("{}: {} has dtype {} but the input has {}", ctx.node().describe(), i == 1 ? "min" : "max",
                              dtype_name(bound.dtype()), dtype_name(x.dtype()));
    if (bound.numel() > 1)
      return invalid_argument("{}: {} must be a scalar, got {} elements", ctx.node().describe(), i == 1 ? "min" : "max",
                              bound.numel());
  }
  bool ok = dispatch_numeric(x.dtype(), [&]<typename T>() {
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if (ctx.opset() < 11) {
      // Before 11 the bounds are float attributes (and only float inputs are allowed).
      if (ctx.node().attr("min")) lo = static_cast<T>(ctx.node().attr_float("min", 0.f));
      if (ctx.node().attr("max")) hi = static_cast<T>(ctx.node().attr_float("max", 0.f));
    } else {
      if (ctx.has_input(1) && ctx.input(1).numel()) lo = ctx.input(1).data<T>()[0];
      if (ctx.has_input(2) && ctx.input(2).numel()) hi = ctx.input(2).data<T>()[0];
    }
    // max-then-min: when min > max every value becomes max, as the spec says.
    map<T>(x, ctx.output(0), [lo, hi](T v) { return std::min(std::max(v, lo), hi); });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

Status logical_not(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kBool) return unsupported_dtype(ctx, x.dtype());
  map<bool>(x, ctx.output(0), [](bool v) { return !v; });
  return Status::Ok();
}

template <typename From, typename To>
void cast_loop(const Tensor& x, Tensor& out) {
  const From* p = x.data<From>();
  To* o = out.data<To>();
  parallel_for(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = cast_value<From, To>(p[i]);
  });
}

Status cast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (x.dtype() == out.dtype()) {
    ctx.alias_output(0, x);
    return Status::Ok();
  }
  // float32 <-> bfloat16, autocast's: the vectorized conversions (same bits).
  if (x.dtype() == DType::kFloat && out.dtype() == DType::kBFloat16) {
    parallel_float_to_bfloat16(x.data<float>(), out.data<BFloat16>(), x.numel());
    return Status::Ok();
  }
  if (x.dtype() == DType::kBFloat16 && out.dtype() == DType::kFloat) {
    parallel_bfloat16_to_float(x.data<BFloat16>(), out.data<float>(), x.numel());
    return Status::Ok();
  }
  bool ok = false;
  dispatch_stored(x.dtype(), [&]<typename From>() {
    ok = dispatch_stored(out.dtype(), [&]<typename To>() { cast_loop<From, To>(x, out); });
  });
  if (!ok)
    return unsupported("{}: cast from {} to {} is not supported", ctx.node().describe(), dtype_name(x.dtype()),
                       dtype_name(out.dtype()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL_INPLACE("Sqrt", 6, 1000, float_unary(Sqrt{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Exp", 6, 1000, vector_unary(Exp{}, exp_f32));
ORT_REGISTER_CPU_KERNEL_INPLACE("Log", 6, 1000, float_unary(Log{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Reciprocal", 6, 1000, float_unary(Reciprocal{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Sin", 7, 1000, float_unary(Sin{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Cos", 7, 1000, float_unary(Cos{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Sigmoid", 6, 1000, vector_unary(Sigmoid{}, sigmoid_f32));
ORT_REGISTER_CPU_KERNEL_INPLACE("Tanh", 6, 1000, vector_unary(Tanh{}, tanh_f32));
ORT_REGISTER_CPU_KERNEL_INPLACE("Erf", 9, 1000, vector_unary(Erf{}, erf_f32));
ORT_REGISTER_CPU_KERNEL_INPLACE("Softplus", 1, 1000, float_unary(Softplus{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Atan", 7, 1000, float_unary(Atan{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Floor", 6, 1000, float_unary(Floor{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Ceil", 6, 1000, float_unary(Ceil{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Round", 11, 1000, float_unary(Round{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Sign", 9, 1000, numeric_unary(Sign{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Neg", 6, 1000, numeric_unary(Neg{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Abs", 6, 1000, numeric_unary(Abs{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Relu", 6, 1000, numeric_unary(Relu{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("LeakyRelu", 6, 1000, leaky_relu);
ORT_REGISTER_CPU_KERNEL_INPLACE("Gelu", 20, 1000, gelu);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "Gelu", 1, 1000, DeviceKind::kCpu, gelu);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "BiasGelu", 1, 1000, DeviceKind::kCpu, bias_gelu);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "Silu", 1, 1000, DeviceKind::kCpu, vector_unary(Silu{}, silu_f32));
ORT_REGISTER_CPU_KERNEL_INPLACE("Clip", 6, 1000, clip);
ORT_REGISTER_CPU_KERNEL_INPLACE("Not", 1, 1000, logical_not);
// Cast is the one kernel that computes on float16 and bfloat16 so far: it converts.
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Cast", 6, 1000, DeviceKind::kCpu, cast, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "CastLike", 15, 1000, DeviceKind::kCpu, cast, all_stored_dtypes());

}  // namespace ort_train
