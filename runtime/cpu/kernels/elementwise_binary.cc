// CPU kernels: Add Sub Mul Div Pow Mod, comparisons, logic, variadic Max/Min/Sum/Mean, Where.
// All broadcast through runtime/cpu/broadcast.h.
#include <cmath>
#include <type_traits>

#include "graph/dispatch.h"
#include "numerics/cast_value.h"
#include "numerics/modulo.h"  // Mod's and integer Div's element, shared with the CUDA kernel
#include "runtime/cpu/broadcast.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename Op>
KernelFn arithmetic(Op op) {
  return [op](KernelContext& ctx) -> Status {
    const Tensor& a = ctx.input(0);
    Tensor& out = ctx.output(0);
    bool ok = dispatch_numeric(a.dtype(), [&]<typename T>() { binary_loop<T, T>(a, ctx.input(1), out, op); });
    return ok ? Status::Ok() : unsupported_dtype(ctx, a.dtype());
  };
}

template <typename Op>
KernelFn comparison(Op op) {
  return [op](KernelContext& ctx) -> Status {
    const Tensor& a = ctx.input(0);
    Tensor& out = ctx.output(0);
    bool ok = dispatch_all(a.dtype(), [&]<typename T>() { binary_loop<T, bool>(a, ctx.input(1), out, op); });
    return ok ? Status::Ok() : unsupported_dtype(ctx, a.dtype());
  };
}

struct AddOp { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a + b); } };
struct SubOp { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a - b); } };
struct MulOp { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a * b); } };
struct DivOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return div_value(a, b);  // numerics/modulo.h: 0 for a zero divisor, no trap for lowest / -1
    } else {
      return a / b;
    }
  }
};
struct MaxOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return a > b ? a : b;
  }
};
struct MinOp {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? a : b;
  }
};
struct EqualOp { template <typename T> bool operator()(T a, T b) const { return a == b; } };
struct LessOp { template <typename T> bool operator()(T a, T b) const { return a < b; } };
struct GreaterOp { template <typename T> bool operator()(T a, T b) const { return a > b; } };
struct LessEqOp { template <typename T> bool operator()(T a, T b) const { return a <= b; } };
struct GreaterEqOp { template <typename T> bool operator()(T a, T b) const { return a >= b; } };
struct AndOp { template <typename T> bool operator()(T a, T b) const { return a && b; } };
struct OrOp { template <typename T> bool operator()(T a, T b) const { return a || b; } };
struct XorOp { template <typename T> bool operator()(T a, T b) const { return static_cast<bool>(a) != static_cast<bool>(b); } };

// Pow: the exponent may have another dtype than the base (opset 12+); compute in double
// for integer bases so e.g. int64 pow gives exact results for small values, and
// convert back as Cast does (a power past the type saturates, NaN gives 0: a
// plain cast of 1e195 to int64 is undefined; found by fuzz_model_execution).
template <typename TB, typename TE>
void pow_loop(const Tensor& a, const Tensor& b, Tensor& out) {
  const TB* pa = a.data<TB>();
  const TE* pb = b.data<TE>();
  TB* po = out.data<TB>();
  auto plan = make_broadcast_plan<2>(out.dims(), {&a.dims(), &b.dims()});
  for_each_broadcast_run(plan, [&](int64_t o, const std::array<int64_t, 2>& off, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      TB x = pa[off[0] + i * plan.inner_step[0]];
      TE y = pb[off[1] + i * plan.inner_step[1]];
      if constexpr (std::is_same_v<TB, float> && std::is_same_v<TE, float>) {
        po[o + i] = std::pow(x, y);
      } else {
        po[o + i] = cast_value<double, TB>(std::pow(static_cast<double>(x), static_cast<double>(y)));
      }
    }
  });
}

Status pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  bool ok = false;
  dispatch_numeric(a.dtype(), [&]<typename TB>() {
    ok = dispatch_numeric(b.dtype(), [&]<typename TE>() { pow_loop<TB, TE>(a, b, out); });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, a.dtype());
}

// Variadic ops fold pairwise into the output; Mean divides at the end.
// Mod(A, B) with the fmod attribute (numerics/modulo.h); floats need fmod = 1.
Status mod_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  bool c_fmod = ctx.node().attr_int("fmod", 0) != 0;
  if (dtype_is_float(a.dtype()) && !c_fmod)
    return invalid_argument("{}: Mod of {} needs fmod=1", ctx.node().describe(), dtype_name(a.dtype()));
  bool ok = dispatch_numeric(a.dtype(), [&]<typename T>() {
    binary_loop<T, T>(a, ctx.input(1), ctx.output(0), [c_fmod](T x, T y) { return mod_value<T>(x, y, c_fmod); });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, a.dtype());
}

template <typename Op>
KernelFn variadic(Op op, bool mean) {
  return [op, mean](KernelContext& ctx) -> Status {
    Tensor& out = ctx.output(0);
    DType t = ctx.input(0).dtype();
    bool ok = dispatch_numeric(t, [&]<typename T>() {
      if (ctx.num_inputs() == 1) {
        // Broadcast the single input into the output (shape equals input's).
        const T* p = ctx.input(0).data<T>();
        T* o = out.data<T>();
        for (int64_t i = 0; i < out.numel(); ++i) o[i] = p[i];
        return;
      }
      // The output may have taken over a dying input's storage (in-place): fold
      // that input first, since every later pass overwrites the output. The ops
      // are commutative, so the order only changes rounding, deterministically.
      std::vector<size_t> order(ctx.num_inputs());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      for (size_t k = 0; k < order.size(); ++k)
        if (ctx.input(k).storage() == out.storage()) {
          std::swap(order[0], order[k]);
          break;
        }
      binary_loop<T, T>(ctx.input(order[0]), ctx.input(order[1]), out, op);
      for (size_t k = 2; k < order.size(); ++k) {
        Tensor acc = out;  // same storage: out = op(out, input k)
        binary_loop<T, T>(acc, ctx.input(order[k]), out, op);
      }
      if (mean) {
        T* o = out.data<T>();
        T n = static_cast<T>(ctx.num_inputs());
        for (int64_t i = 0; i < out.numel(); ++i) o[i] = static_cast<T>(o[i] / n);
      }
    });
    return ok ? Status::Ok() : unsupported_dtype(ctx, t);
  };
}

Status where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  Tensor& out = ctx.output(0);
  auto plan = make_broadcast_plan<3>(out.dims(), {&c.dims(), &x.dims(), &y.dims()});
  bool ok = dispatch_all(x.dtype(), [&]<typename T>() {
    const bool* pc = c.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    for_each_broadcast_run(plan, [&](int64_t o, const std::array<int64_t, 3>& off, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        po[o + i] = pc[off[0] + i * plan.inner_step[0]] ? px[off[1] + i * plan.inner_step[1]]
                                                        : py[off[2] + i * plan.inner_step[2]];
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL_INPLACE("Add", 7, 1000, arithmetic(AddOp{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Sub", 7, 1000, arithmetic(SubOp{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Mul", 7, 1000, arithmetic(MulOp{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Div", 7, 1000, arithmetic(DivOp{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Pow", 7, 1000, pow_kernel);
ORT_REGISTER_CPU_KERNEL_INPLACE("Mod", 10, 1000, mod_kernel);
ORT_REGISTER_CPU_KERNEL("Equal", 7, 1000, comparison(EqualOp{}));
ORT_REGISTER_CPU_KERNEL("Less", 7, 1000, comparison(LessOp{}));
ORT_REGISTER_CPU_KERNEL("Greater", 7, 1000, comparison(GreaterOp{}));
ORT_REGISTER_CPU_KERNEL("LessOrEqual", 12, 1000, comparison(LessEqOp{}));
ORT_REGISTER_CPU_KERNEL("GreaterOrEqual", 12, 1000, comparison(GreaterEqOp{}));
ORT_REGISTER_CPU_KERNEL("And", 7, 1000, comparison(AndOp{}));
ORT_REGISTER_CPU_KERNEL("Or", 7, 1000, comparison(OrOp{}));
ORT_REGISTER_CPU_KERNEL("Xor", 7, 1000, comparison(XorOp{}));
ORT_REGISTER_CPU_KERNEL_INPLACE("Max", 8, 1000, variadic(MaxOp{}, false));
ORT_REGISTER_CPU_KERNEL_INPLACE("Min", 8, 1000, variadic(MinOp{}, false));
ORT_REGISTER_CPU_KERNEL_INPLACE("Sum", 8, 1000, variadic(AddOp{}, false));
ORT_REGISTER_CPU_KERNEL_INPLACE("Mean", 8, 1000, variadic(AddOp{}, true));
ORT_REGISTER_CPU_KERNEL_INPLACE("Where", 9, 1000, where_kernel);

}  // namespace ort_train
