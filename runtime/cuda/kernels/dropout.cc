// CUDA registrations: Dropout, com.ort_train DropoutAdd (the dropout, then the
// residual added in place) and DropoutGrad, deciding "training" and the
// ratio exactly as the CPU kernels do (runtime/cpu/kernels/dropout.cc,
// dropout_grad.cc). Kernels: cuda_kernels/dropout.cu.
#include "cuda_kernels/dropout.h"
#include "cuda_kernels/elementwise.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/dropout_seed.h"

namespace ort_train::cuda {
namespace {

// An optional scalar input (ratio, training_mode) read on the host.
Result<double> scalar_or(KernelContext& ctx, size_t i, double fallback) {
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return fallback;
  ASSIGN_OR_RETURN(Tensor h, host_input(ctx, i));
  if (h.dtype() == DType::kBool) return h.data<bool>()[0] ? 1.0 : 0.0;
  return h.to_double_vector()[0];
}

Status dropout(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto t = stored_elem_type(x.dtype());  // 16-bit too (registered below)
  if (!t || !dtype_is_float(x.dtype())) return unsupported_cuda_dtype(ctx, x.dtype());
  double ratio = ctx.node().attr_float("ratio", 0.5f);
  bool training = ctx.options().training;
  if (ctx.opset() >= 12) {
    ASSIGN_OR_RETURN(ratio, scalar_or(ctx, 1, 0.5));
    ASSIGN_OR_RETURN(double mode, scalar_or(ctx, 2, 0.0));
    training = mode != 0.0;
  }
  bool with_mask = ctx.has_output(1);
  if (!training || ratio == 0.0) {
    ctx.alias_output(0, x);
    if (with_mask) {
      CUDA_OUTPUT(m, ctx, 1);
      CUDA_RETURN_IF_ERROR(launch_fill_true(m.data<bool>(), m.numel(), stream()));
    }
    return Status::Ok();
  }
  if (!(ratio > 0.0 && ratio < 1.0))
    return invalid_argument("{}: ratio must be in [0, 1), got {}", ctx.node().describe(), ratio);
  CUDA_OUTPUT(y, ctx, 0);
  bool* mask = nullptr;
  if (with_mask) {
    CUDA_OUTPUT(m, ctx, 1);
    mask = m.data<bool>();
  }
  CUDA_RETURN_IF_ERROR(launch_dropout(*t, x.raw(), y.raw(), mask, x.numel(), dropout_seed(ctx),
                                      static_cast<float>(ratio), 1.0 / (1.0 - ratio), stream()));
  return Status::Ok();
}

// The ratio and training flag of DropoutAdd and DropoutGrad: inputs at
// `at` and at + 1 (an opset-12 Dropout's), or with runtime_training=1 (fused
// from, or the gradient of, a Dropout before opset 12) the attribute and the run.
Result<std::pair<double, bool>> ratio_and_training(KernelContext& ctx, size_t at) {
  if (ctx.node().attr_int("runtime_training", 0) != 0)
    return std::make_pair(static_cast<double>(ctx.node().attr_float("ratio", 0.5f)), ctx.options().training);
  ASSIGN_OR_RETURN(double ratio, scalar_or(ctx, at, 0.5));
  ASSIGN_OR_RETURN(double mode, scalar_or(ctx, at + 1, 0.0));
  return std::make_pair(ratio, mode != 0.0);
}

Status dropout_add(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& r = ctx.input(1);
  auto t = elem_type(x.dtype());
  if (!t || !dtype_is_float(x.dtype()) || r.dtype() != x.dtype()) return unsupported_cuda_dtype(ctx, x.dtype());
  ASSIGN_OR_RETURN(auto settings, ratio_and_training(ctx, 2));
  auto [ratio, training] = settings;
  bool dropping = training && ratio != 0.0;
  if (dropping && !(ratio > 0.0 && ratio < 1.0))
    return invalid_argument("{}: ratio must be in [0, 1), got {}", ctx.node().describe(), ratio);
  CUDA_OUTPUT(y, ctx, 0);
  bool* mask = nullptr;
  if (ctx.has_output(1)) {
    CUDA_OUTPUT(m, ctx, 1);
    mask = m.data<bool>();
    if (!dropping) CUDA_RETURN_IF_ERROR(launch_fill_true(mask, m.numel(), stream()));
  }
  if (y.numel() == 0) return Status::Ok();
  // The dropped X goes into Y when it has Y's shape (a residual of X's
  // shape), else into a scratch of X's; R is then added as Add would.
  bool same = r.dims() == x.dims();
  const void* dropped = x.raw();
  Tensor scratch;
  if (dropping) {
    if (!same) { ASSIGN_OR_RETURN(scratch, temp(ctx, x.dtype(), x.dims())); }
    void* into = same ? y.raw() : scratch.raw();
    CUDA_RETURN_IF_ERROR(launch_dropout(*t, x.raw(), into, mask, x.numel(), dropout_seed(ctx),
                                        static_cast<float>(ratio), 1.0 / (1.0 - ratio), stream()));
    dropped = into;
  }
  IndexMap xm, rm;
  if (!same) {
    ASSIGN_OR_RETURN(xm, broadcast_map(x.dims(), y.dims()));
    ASSIGN_OR_RETURN(rm, broadcast_map(r.dims(), y.dims()));
  }
  CUDA_RETURN_IF_ERROR(launch_binary(BinaryOp::kAdd, *t, dropped, r.raw(), y.raw(), y.numel(), same, xm, rm, stream()));
  return Status::Ok();
}

Status dropout_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  auto t = stored_elem_type(dy.dtype());  // 16-bit too (registered below)
  if (!t || !dtype_is_float(dy.dtype())) return unsupported_cuda_dtype(ctx, dy.dtype());
  ASSIGN_OR_RETURN(auto settings, ratio_and_training(ctx, 2));
  auto [ratio, training] = settings;
  double scale = training && ratio > 0.0 ? 1.0 / (1.0 - ratio) : 1.0;
  CUDA_OUTPUT(dx, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_dropout_grad(*t, dy.raw(), ctx.input(1).data<bool>(), dx.raw(), dy.numel(), scale, stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL_INPLACE("Dropout", 7, 1000, dropout);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "DropoutAdd", 1, 1000, dropout_add);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "DropoutGrad", 1, 1000, dropout_grad);
// 16-bit data (half_activations'): the product in float32, rounded once, as the CPU's 16-bit kernels.
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Dropout", 7, 1000, DeviceKind::kCuda, dropout,
                               (std::vector<DType>{DType::kBFloat16, DType::kFloat16}));
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "DropoutGrad", 1, 1000, DeviceKind::kCuda, dropout_grad,
                               (std::vector<DType>{DType::kBFloat16, DType::kFloat16}));

}  // namespace ort_train::cuda
