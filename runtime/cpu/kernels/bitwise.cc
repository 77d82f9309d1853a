// CPU kernels of BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot and BitShift
// on every integer type, broadcasting through runtime/cpu/broadcast.h.
// BitShift, as ONNX's reference: a left shift moves the bits as unsigned; a
// right shift of a signed type is arithmetic; a shift that is negative or
// not below the type's width gives 0 (-1 shifting a negative value right),
// where C++ leaves it undefined.
#include <type_traits>

#include "graph/dispatch.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename Op>
KernelFn bitwise(Op op) {
  return [op](KernelContext& ctx) -> Status {
    const Tensor& a = ctx.input(0);
    bool ok = dispatch_integer(a.dtype(), [&]<typename T>() { binary_loop<T, T>(a, ctx.input(1), ctx.output(0), op); });
    return ok ? Status::Ok() : unsupported_dtype(ctx, a.dtype());
  };
}

struct AndBits { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a & b); } };
struct OrBits { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a | b); } };
struct XorBits { template <typename T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); } };

Status bitwise_not(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool ok = dispatch_integer(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    T* o = ctx.output(0).data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<T>(~p[i]);
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

Status bit_shift(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const bool left = ctx.node().attr_string("direction", "") == "LEFT";
  bool ok = dispatch_integer(a.dtype(), [&]<typename T>() {
    using U = std::make_unsigned_t<T>;
    constexpr int64_t kBits = sizeof(T) * 8;
    binary_loop<T, T>(a, ctx.input(1), ctx.output(0), [left](T x, T s) {
      const auto shift = static_cast<int64_t>(s);
      if (shift < 0 || shift >= kBits) return left || x >= 0 ? T(0) : T(-1);  // every bit shifted out
      if (left) return static_cast<T>(static_cast<U>(static_cast<U>(x) << shift));
      return static_cast<T>(x >> shift);  // arithmetic for signed types (C++20), logical for unsigned
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, a.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("BitwiseAnd", 18, 1000, bitwise(AndBits{}));
ORT_REGISTER_CPU_KERNEL("BitwiseOr", 18, 1000, bitwise(OrBits{}));
ORT_REGISTER_CPU_KERNEL("BitwiseXor", 18, 1000, bitwise(XorBits{}));
ORT_REGISTER_CPU_KERNEL("BitwiseNot", 18, 1000, bitwise_not);
ORT_REGISTER_CPU_KERNEL("BitShift", 11, 1000, bit_shift);

}  // namespace ort_train
