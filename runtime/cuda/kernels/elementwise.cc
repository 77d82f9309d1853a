// CUDA registrations: binary ops with broadcasting (and the variadic Sum, Mean,
// Max, Min as a chain of them), Where, unary math and activations, Clip, Cast,
// and the activation gradients. Kernels: cuda_kernels/elementwise.cu.
#include "cuda_kernels/elementwise.h"
#include "cuda_kernels/vector_math.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

// The kernels below take the 16-bit floats too (stored_elem_type): the ones
// registered for them at the end of this file (ORT_CUDA_HALF) widen each
// element to float32. elem_type() alone refused them, and half_activations'
// 16-bit Gelu, Relu, Add... failed on the first GPU that ran them.
Status binary_into(KernelContext& ctx, BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  auto t = stored_elem_type(a.dtype());
  if (!t || a.dtype() != b.dtype()) return unsupported_cuda_dtype(ctx, a.dtype());
  bool same = a.dims() == out.dims() && b.dims() == out.dims();
  IndexMap am, bm;
  if (!same) {
    ASSIGN_OR_RETURN(am, broadcast_map(a.dims(), out.dims()));
    ASSIGN_OR_RETURN(bm, broadcast_map(b.dims(), out.dims()));
  }
  CUDA_RETURN_IF_ERROR(launch_binary(op, *t, a.raw(), b.raw(), out.raw(), out.numel(), same, am, bm, stream()));
  return Status::Ok();
}

KernelFn binary(BinaryOp op) {
  return [op](KernelContext& ctx) -> Status {
    CUDA_OUTPUT(out, ctx, 0);
    return binary_into(ctx, op, ctx.input(0), ctx.input(1), out);
  };
}

// Pow allows an exponent of another numeric type: cast it to the base's first.
Status power(KernelContext& ctx) {
  CUDA_OUTPUT(out, ctx, 0);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() == b.dtype()) return binary_into(ctx, BinaryOp::kPow, a, b, out);
  auto ta = elem_type(a.dtype()), tb = elem_type(b.dtype());
  if (!ta || !tb || *ta == ElemType::kBool || *tb == ElemType::kBool) return unsupported_cuda_dtype(ctx, b.dtype());
  ASSIGN_OR_RETURN(Tensor exponent, temp(ctx, a.dtype(), b.dims()));
  CUDA_RETURN_IF_ERROR(launch_cast(*tb, *ta, b.raw(), exponent.raw(), b.numel(), stream()));
  return binary_into(ctx, BinaryOp::kPow, a, exponent, out);
}

// Mod: fmod = 1 for floats (the shape rule refuses fmod = 0 there), either for integers.
Status mod(KernelContext& ctx) {
  const bool c_fmod = ctx.node().attr_int("fmod", 0) != 0;
  if (dtype_is_float(ctx.input(0).dtype()) && !c_fmod) return unsupported_cuda_dtype(ctx, ctx.input(0).dtype());
  CUDA_OUTPUT(out, ctx, 0);
  return binary_into(ctx, c_fmod ? BinaryOp::kFmod : BinaryOp::kMod, ctx.input(0), ctx.input(1), out);
}

// Sum/Mean/Max/Min over any number of inputs: a chain of broadcasting binary ops into the output.
KernelFn variadic(BinaryOp op, bool mean) {
  return [op, mean](KernelContext& ctx) -> Status {
    CUDA_OUTPUT(out, ctx, 0);
    size_t n = ctx.num_inputs();
    if (n == 1) {
      ASSIGN_OR_RETURN(IndexMap m, broadcast_map(ctx.input(0).dims(), out.dims()));
      auto t = stored_elem_type(out.dtype());
      if (!t) return unsupported_cuda_dtype(ctx, out.dtype());
      if (dtype_is_half(out.dtype()) && ctx.input(0).dims() == out.dims()) {  // 16 bits have no Max: a copy
        CUDA_RETURN_IF_ERROR(launch_cast(*t, *t, ctx.input(0).raw(), out.raw(), out.numel(), stream()));
        return Status::Ok();
      }
      // out = in op in is wrong for Add; copy through Max(in, in), which is the identity.
      CUDA_RETURN_IF_ERROR(launch_binary(BinaryOp::kMax, *t, ctx.input(0).raw(), ctx.input(0).raw(), out.raw(),
                                         out.numel(), false, m, m, stream()));
    } else {
      RETURN_IF_ERROR(binary_into(ctx, op, ctx.input(0), ctx.input(1), out));
      for (size_t i = 2; i < n; ++i) RETURN_IF_ERROR(binary_into(ctx, op, out, ctx.input(i), out));
    }
    if (mean) {
      if (out.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, out.dtype());
      CUDA_RETURN_IF_ERROR(launch_scale(out.data<float>(), 1.f / static_cast<float>(n), out.numel(), stream()));
    }
    return Status::Ok();
  };
}

Status where(KernelContext& ctx) {
  CUDA_OUTPUT(out, ctx, 0);
  const Tensor &c = ctx.input(0), &x = ctx.input(1), &y = ctx.input(2);
  ASSIGN_OR_RETURN(IndexMap cm, broadcast_map(c.dims(), out.dims()));
  ASSIGN_OR_RETURN(IndexMap xm, broadcast_map(x.dims(), out.dims()));
  ASSIGN_OR_RETURN(IndexMap ym, broadcast_map(y.dims(), out.dims()));
  CUDA_RETURN_IF_ERROR(launch_where(c.data<bool>(), x.raw(), y.raw(), out.raw(), static_cast<int>(dtype_size(x.dtype())),
                                    out.numel(), cm, xm, ym, stream()));
  return Status::Ok();
}

// `floats_only`: transcendental functions (float/double); others also take integers.
KernelFn unary(UnaryOp op, bool floats_only) {
  return [op, floats_only](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    auto t = stored_elem_type(x.dtype());
    bool ok = t && (op == UnaryOp::kNot ? *t == ElemType::kBool
                                        : *t != ElemType::kBool && (!floats_only || dtype_is_float(x.dtype())));
    if (!ok) return unsupported_cuda_dtype(ctx, x.dtype());
    float alpha = 0.f;
    UnaryOp applied = op;
    if (op == UnaryOp::kLeakyRelu) alpha = ctx.node().attr_float("alpha", 0.01f);
    if (op == UnaryOp::kGelu) {
      std::string approx = ctx.node().attr_string("approximate", "none");
      if (approx != "none" && approx != "tanh")
        return invalid_argument("{}: approximate must be 'none' or 'tanh', got '{}'", ctx.node().describe(), approx);
      if (approx == "tanh") applied = UnaryOp::kGeluTanh;
    }
    CUDA_OUTPUT(out, ctx, 0);
    CUDA_RETURN_IF_ERROR(launch_unary(applied, *t, x.raw(), out.raw(), x.numel(), alpha, stream()));
    return Status::Ok();
  };
}

Status clip(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto t = elem_type(x.dtype());
  if (!t || *t == ElemType::kBool) return unsupported_cuda_dtype(ctx, x.dtype());
  CUDA_OUTPUT(out, ctx, 0);
  const void* lo = nullptr;
  const void* hi = nullptr;
  Tensor lo_t, hi_t;
  if (ctx.opset() < 11) {
    // Bounds are float attributes before opset 11: put them on the device.
    auto bound_to_device = [&](const char* name, Tensor& dst) -> Status {
      if (!ctx.node().attr(name)) return Status::Ok();
      if (x.dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, x.dtype());
      float v = ctx.node().attr_float(name, 0.f);
      ASSIGN_OR_RETURN(dst, temp(ctx, DType::kFloat, {}));
      return cuda::upload(dst.raw(), &v, sizeof(float));
    };
    RETURN_IF_ERROR(bound_to_device("min", lo_t));
    RETURN_IF_ERROR(bound_to_device("max", hi_t));
    lo = lo_t.defined() ? lo_t.raw() : nullptr;
    hi = hi_t.defined() ? hi_t.raw() : nullptr;
  } else {
    for (size_t i = 1; i <= 2; ++i) {
      if (!ctx.has_input(i) || ctx.input(i).numel() == 0) continue;
      if (ctx.input(i).dtype() != x.dtype() || ctx.input(i).numel() != 1)
        return invalid_argument("{}: {} must be a scalar of the input's dtype", ctx.node().describe(), i == 1 ? "min" : "max");
      (i == 1 ? lo : hi) = ctx.input(i).raw();
    }
  }
  CUDA_RETURN_IF_ERROR(launch_clip(*t, x.raw(), out.raw(), x.numel(), lo, hi, stream()));
  return Status::Ok();
}

Status cast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  if (x.dtype() == out.dtype()) {
    ctx.alias_output(0, x);
    return Status::Ok();
  }
  auto from = stored_elem_type(x.dtype()), to = stored_elem_type(out.dtype());
  if (!from || !to)
    return unsupported("{}: cast from {} to {} is not supported by the CUDA kernel", ctx.node().describe(),
                       dtype_name(x.dtype()), dtype_name(out.dtype()));
  CUDA_RETURN_IF_ERROR(launch_cast(*from, *to, x.raw(), out.raw(), x.numel(), stream()));
  return Status::Ok();
}

KernelFn activation_grad(ActivationGrad op) {
  return [op](KernelContext& ctx) -> Status {
    const Tensor &dy = ctx.input(0), &saved = ctx.input(1);
    if (!dtype_is_float(dy.dtype()) || dy.dtype() != saved.dtype() || dy.numel() != saved.numel())
      return unsupported_cuda_dtype(ctx, dy.dtype());
    ActivationGrad applied = op;
    float alpha = 0.f;
    if (op == ActivationGrad::kLeakyRelu) alpha = ctx.node().attr_float("alpha", 0.01f);
    if (op == ActivationGrad::kGelu && ctx.node().attr_string("approximate", "none") == "tanh")
      applied = ActivationGrad::kGeluTanh;
    CUDA_OUTPUT(dx, ctx, 0);
    CUDA_RETURN_IF_ERROR(launch_activation_grad(applied, *stored_elem_type(dy.dtype()), dy.raw(), saved.raw(), dx.raw(),
                                                dy.numel(), alpha, stream()));
    return Status::Ok();
  };
}

// bias_gelu_fusion's BiasGelu(X, B): the sum into Y, then GELU in place.
Status bias_gelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::string approx = ctx.node().attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return invalid_argument("{}: approximate must be 'none' or 'tanh', got '{}'", ctx.node().describe(), approx);
  CUDA_OUTPUT(y, ctx, 0);
  if (y.numel() == 0) return Status::Ok();
  RETURN_IF_ERROR(add_bias_into(ctx, x, ctx.input(1), y.raw()));
  CUDA_RETURN_IF_ERROR(launch_unary(approx == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu, *elem_type(x.dtype()),
                                    y.raw(), y.raw(), y.numel(), 0.f, stream()));
  return Status::Ok();
}

// BiasGeluGrad(dY, X, B): GeluGrad at X + B, the sum made in a scratch.
Status bias_gelu_grad(KernelContext& ctx) {
  const Tensor &dy = ctx.input(0), &x = ctx.input(1);
  if (!dtype_is_float(dy.dtype()) || dy.dtype() != x.dtype() || dy.dims() != x.dims())
    return unsupported_cuda_dtype(ctx, dy.dtype());
  CUDA_OUTPUT(dx, ctx, 0);
  if (dx.numel() == 0) return Status::Ok();
  ASSIGN_OR_RETURN(Tensor sum, temp(ctx, x.dtype(), x.dims()));
  RETURN_IF_ERROR(add_bias_into(ctx, x, ctx.input(2), sum.raw()));
  ActivationGrad op = ctx.node().attr_string("approximate", "none") == "tanh" ? ActivationGrad::kGeluTanh
                                                                              : ActivationGrad::kGelu;
  CUDA_RETURN_IF_ERROR(launch_activation_grad(op, *elem_type(dy.dtype()), dy.raw(), sum.raw(), dx.raw(), dy.numel(),
                                              0.f, stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL_INPLACE("Add", 7, 1000, binary(BinaryOp::kAdd));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Sub", 7, 1000, binary(BinaryOp::kSub));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Mul", 7, 1000, binary(BinaryOp::kMul));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Div", 7, 1000, binary(BinaryOp::kDiv));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Pow", 7, 1000, power);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Mod", 10, 1000, mod);
ORT_REGISTER_CUDA_KERNEL("Equal", 7, 1000, binary(BinaryOp::kEqual));
ORT_REGISTER_CUDA_KERNEL("Less", 7, 1000, binary(BinaryOp::kLess));
ORT_REGISTER_CUDA_KERNEL("Greater", 7, 1000, binary(BinaryOp::kGreater));
ORT_REGISTER_CUDA_KERNEL("LessOrEqual", 12, 1000, binary(BinaryOp::kLessOrEqual));
ORT_REGISTER_CUDA_KERNEL("GreaterOrEqual", 12, 1000, binary(BinaryOp::kGreaterOrEqual));
ORT_REGISTER_CUDA_KERNEL("And", 7, 1000, binary(BinaryOp::kAnd));
ORT_REGISTER_CUDA_KERNEL("Or", 7, 1000, binary(BinaryOp::kOr));
ORT_REGISTER_CUDA_KERNEL("Xor", 7, 1000, binary(BinaryOp::kXor));
ORT_REGISTER_CUDA_KERNEL("Max", 8, 1000, variadic(BinaryOp::kMax, false));
ORT_REGISTER_CUDA_KERNEL("Min", 8, 1000, variadic(BinaryOp::kMin, false));
ORT_REGISTER_CUDA_KERNEL("Sum", 8, 1000, variadic(BinaryOp::kAdd, false));
ORT_REGISTER_CUDA_KERNEL("Mean", 8, 1000, variadic(BinaryOp::kAdd, true));
ORT_REGISTER_CUDA_KERNEL("Where", 9, 1000, where);

ORT_REGISTER_CUDA_KERNEL_INPLACE("Sqrt", 6, 1000, unary(UnaryOp::kSqrt, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Exp", 6, 1000, unary(UnaryOp::kExp, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Log", 6, 1000, unary(UnaryOp::kLog, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Reciprocal", 6, 1000, unary(UnaryOp::kReciprocal, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Sin", 7, 1000, unary(UnaryOp::kSin, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Cos", 7, 1000, unary(UnaryOp::kCos, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Sigmoid", 6, 1000, unary(UnaryOp::kSigmoid, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Tanh", 6, 1000, unary(UnaryOp::kTanh, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Erf", 9, 1000, unary(UnaryOp::kErf, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Softplus", 1, 1000, unary(UnaryOp::kSoftplus, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Atan", 7, 1000, unary(UnaryOp::kAtan, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Floor", 6, 1000, unary(UnaryOp::kFloor, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Ceil", 6, 1000, unary(UnaryOp::kCeil, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Round", 11, 1000, unary(UnaryOp::kRound, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Sign", 9, 1000, unary(UnaryOp::kSign, false));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Neg", 6, 1000, unary(UnaryOp::kNeg, false));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Abs", 6, 1000, unary(UnaryOp::kAbs, false));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Relu", 6, 1000, unary(UnaryOp::kRelu, false));
ORT_REGISTER_CUDA_KERNEL_INPLACE("LeakyRelu", 6, 1000, unary(UnaryOp::kLeakyRelu, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Gelu", 20, 1000, unary(UnaryOp::kGelu, true));
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "Gelu", 1, 1000, DeviceKind::kCuda, unary(UnaryOp::kGelu, true));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "BiasGelu", 1, 1000, bias_gelu);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "Silu", 1, 1000, DeviceKind::kCuda, unary(UnaryOp::kSilu, true));
ORT_REGISTER_CUDA_KERNEL_INPLACE("Clip", 6, 1000, clip);
ORT_REGISTER_CUDA_KERNEL_INPLACE("Not", 1, 1000, unary(UnaryOp::kNot, false));
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Cast", 6, 1000, DeviceKind::kCuda, cast, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "CastLike", 15, 1000, DeviceKind::kCuda, cast, all_stored_dtypes());

ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "ReluGrad", 1, 1000, activation_grad(ActivationGrad::kRelu));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "SigmoidGrad", 1, 1000, activation_grad(ActivationGrad::kSigmoid));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "TanhGrad", 1, 1000, activation_grad(ActivationGrad::kTanh));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "LeakyReluGrad", 1, 1000, activation_grad(ActivationGrad::kLeakyRelu));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "GeluGrad", 1, 1000, activation_grad(ActivationGrad::kGelu));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "BiasGeluGrad", 1, 1000, bias_gelu_grad);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "SiluGrad", 1, 1000, activation_grad(ActivationGrad::kSilu));

// 16-bit registrations of the ops half_activations keeps in bfloat16/float16
// (graph/passes/half_activations.cc): each element widened, computed in
// float32 and rounded once (elementwise.h's half_* functions), the CPU twins'
// arithmetic (runtime/cpu/kernels/half_twins.cc). A Sum of more than two
// rounds after each addition, as the CPU's does.
const std::vector<DType> kHalfTypes{DType::kBFloat16, DType::kFloat16};
#define ORT_CUDA_HALF(domain, op, min_opset, fn) \
  ORT_REGISTER_KERNEL_FOR_DTYPES(domain, op, min_opset, 1000, DeviceKind::kCuda, fn, kHalfTypes)
ORT_CUDA_HALF("", "Relu", 6, unary(UnaryOp::kRelu, false));
ORT_CUDA_HALF("", "Tanh", 6, unary(UnaryOp::kTanh, true));
ORT_CUDA_HALF("", "Sigmoid", 6, unary(UnaryOp::kSigmoid, true));
ORT_CUDA_HALF("", "Neg", 6, unary(UnaryOp::kNeg, false));
ORT_CUDA_HALF("", "Gelu", 20, unary(UnaryOp::kGelu, true));
ORT_CUDA_HALF(kOrtTrainDomain, "Gelu", 1, unary(UnaryOp::kGelu, true));
ORT_CUDA_HALF(kOrtTrainDomain, "Silu", 1, unary(UnaryOp::kSilu, true));
ORT_CUDA_HALF("", "Add", 7, binary(BinaryOp::kAdd));
ORT_CUDA_HALF("", "Sub", 7, binary(BinaryOp::kSub));
ORT_CUDA_HALF("", "Mul", 7, binary(BinaryOp::kMul));
ORT_CUDA_HALF("", "Div", 7, binary(BinaryOp::kDiv));
ORT_CUDA_HALF("", "Sum", 8, variadic(BinaryOp::kAdd, false));
ORT_CUDA_HALF(kOrtTrainDomain, "ReluGrad", 1, activation_grad(ActivationGrad::kRelu));
ORT_CUDA_HALF(kOrtTrainDomain, "SigmoidGrad", 1, activation_grad(ActivationGrad::kSigmoid));
ORT_CUDA_HALF(kOrtTrainDomain, "TanhGrad", 1, activation_grad(ActivationGrad::kTanh));
ORT_CUDA_HALF(kOrtTrainDomain, "GeluGrad", 1, activation_grad(ActivationGrad::kGelu));
ORT_CUDA_HALF(kOrtTrainDomain, "SiluGrad", 1, activation_grad(ActivationGrad::kSilu));

}  // namespace ort_train::cuda
