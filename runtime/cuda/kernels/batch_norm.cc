// CUDA registrations: BatchNormalization (inference, and training_mode=1 from
// opset 14 with updated running statistics) and BatchNormalizationGrad, float32.
// Hand-written kernels (cuda_kernels/pooling.cu) rather than cuDNN, to keep the
// CPU kernel's semantics: statistics in double, biased batch variance in the
// running-variance update (cuDNN uses the unbiased one), deterministic sums.
#include "cuda_kernels/batch_norm.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

struct ChannelDims {
  int64_t N = 0, C = 0, S = 0;
};

Result<ChannelDims> channel_dims(const KernelContext& ctx, const Tensor& X) {
  if (X.rank() < 2) return shape_error("{}: X must have rank >= 2, got {}", ctx.node().describe(), X.rank());
  ChannelDims d{X.dims()[0], X.dims()[1], 0};
  d.S = d.N * d.C == 0 ? 0 : X.numel() / (d.N * d.C);
  return d;
}

Status check_float(const KernelContext& ctx, size_t first, size_t last) {
  for (size_t i = first; i <= last; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype() != DType::kFloat) return unsupported_cuda_dtype(ctx, ctx.input(i).dtype());
  return Status::Ok();
}

// mean and var (device doubles, C each) of X's channels over images and positions.
Status batch_statistics(KernelContext& ctx, const Tensor& X, const ChannelDims& d, double* mean, double* var) {
  ASSIGN_OR_RETURN(Tensor partials, temp(ctx, DType::kDouble, {channel_sum_partials(d.N, d.C, d.S)}));
  double cnt = static_cast<double>(d.N * d.S);
  double* p = partials.data<double>();
  const float* x = X.data<float>();
  CUDA_RETURN_IF_ERROR(launch_channel_sums(ChannelSum::kX, x, nullptr, nullptr, nullptr, d.N, d.C, d.S, cnt, p, mean,
                                           nullptr, stream()));
  CUDA_RETURN_IF_ERROR(launch_channel_sums(ChannelSum::kSquaredDeviation, x, nullptr, mean, nullptr, d.N, d.C, d.S,
                                           cnt, p, var, nullptr, stream()));
  return Status::Ok();
}

Status batch_norm(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  RETURN_IF_ERROR(check_float(ctx, 0, 4));
  ASSIGN_OR_RETURN(ChannelDims d, channel_dims(ctx, X));
  for (size_t i = 1; i <= 4; ++i)
    if (ctx.input(i).numel() != d.C)
      return shape_error("{}: input {} has {} elements, X has {} channels", ctx.node().describe(), i,
                         ctx.input(i).numel(), d.C);
  double eps = ctx.node().attr_float("epsilon", 1e-5f);
  double momentum = ctx.node().attr_float("momentum", 0.9f);
  // As on the CPU: training_mode exists from opset 14; older opsets run the inference formula.
  bool training = ctx.opset() >= 14 && ctx.node().attr_int("training_mode", 0) != 0;
  const float* scale = ctx.input(1).data<float>();
  const float* bias = ctx.input(2).data<float>();
  const float* rmean = ctx.input(3).data<float>();
  const float* rvar = ctx.input(4).data<float>();
  CUDA_OUTPUT(Y, ctx, 0);
  ASSIGN_OR_RETURN(Tensor stats, temp(ctx, DType::kDouble, {2 * d.C}));
  ASSIGN_OR_RETURN(Tensor coef, temp(ctx, DType::kFloat, {2 * d.C}));
  double* mean = stats.data<double>();
  double* var = mean + d.C;
  float* a = coef.data<float>();
  float* shift = a + d.C;
  if (training) {
    RETURN_IF_ERROR(batch_statistics(ctx, X, d, mean, var));
    float* out_mean = nullptr;
    float* out_var = nullptr;
    if (ctx.has_output(1)) {
      CUDA_OUTPUT(m, ctx, 1);
      out_mean = m.data<float>();
    }
    if (ctx.num_outputs() > 2 && ctx.has_output(2)) {
      CUDA_OUTPUT(v, ctx, 2);
      out_var = v.data<float>();
    }
    CUDA_RETURN_IF_ERROR(launch_batch_norm_prepare(d.C, mean, var, scale, bias, eps, rmean, rvar, momentum, out_mean,
                                                   out_var, a, shift, stream()));
  } else {
    CUDA_RETURN_IF_ERROR(launch_load_stats(rmean, false, d.C, mean, stream()));
    CUDA_RETURN_IF_ERROR(launch_load_stats(rvar, false, d.C, var, stream()));
    CUDA_RETURN_IF_ERROR(launch_batch_norm_prepare(d.C, mean, var, scale, bias, eps, nullptr, nullptr, momentum,
                                                   nullptr, nullptr, a, shift, stream()));
    // Optional statistic outputs echo the running values (odd: mean, even: variance).
    for (size_t o = 1; o < ctx.num_outputs(); ++o) {
      if (!ctx.has_output(o)) continue;
      CUDA_OUTPUT(s, ctx, o);
      const Tensor& src = ctx.input(o % 2 == 1 ? 3 : 4);
      if (s.nbytes() != src.nbytes()) return shape_error("{}: output {} must have {} elements", ctx.node().describe(), o, d.C);
      if (s.nbytes())
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(s.raw(), src.raw(), s.nbytes(), cudaMemcpyDeviceToDevice, stream()));
    }
  }
  CUDA_RETURN_IF_ERROR(launch_batch_norm_apply(X.data<float>(), Y.data<float>(), a, shift, d.N, d.C, d.S, stream()));
  return Status::Ok();
}

Status batch_norm_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  RETURN_IF_ERROR(check_float(ctx, 0, 2));
  ASSIGN_OR_RETURN(ChannelDims d, channel_dims(ctx, X));
  if (dY.dims() != X.dims()) return shape_error("{}: dY and X must have the same shape", ctx.node().describe());
  if (ctx.input(2).numel() != d.C)
    return shape_error("{}: Scale has {} elements, X has {} channels", ctx.node().describe(), ctx.input(2).numel(), d.C);
  bool training = ctx.node().attr_int("training_mode", 0) != 0;
  double eps = ctx.node().attr_float("epsilon", 1e-5f);
  ASSIGN_OR_RETURN(Tensor stats, temp(ctx, DType::kDouble, {5 * d.C}));
  double* mean = stats.data<double>();
  double* var = mean + d.C;
  double* inv = var + d.C;
  double* sum_dy = inv + d.C;
  double* sum_dy_xhat = sum_dy + d.C;
  if (training) {
    RETURN_IF_ERROR(batch_statistics(ctx, X, d, mean, var));
  } else {
    for (size_t i = 3; i <= 4; ++i) {
      if (!ctx.has_input(i)) return invalid_argument("{}: input {} (running statistic) is required", ctx.node().describe(), i);
      const Tensor& t = ctx.input(i);
      if (t.dtype() != DType::kFloat && t.dtype() != DType::kDouble) return unsupported_cuda_dtype(ctx, t.dtype());
      if (t.numel() != d.C)
        return shape_error("{}: input {} has {} elements, X has {} channels", ctx.node().describe(), i, t.numel(), d.C);
      CUDA_RETURN_IF_ERROR(launch_load_stats(t.raw(), t.dtype() == DType::kDouble, d.C, i == 3 ? mean : var, stream()));
    }
  }
  CUDA_RETURN_IF_ERROR(launch_inv_std(var, eps, d.C, inv, stream()));
  ASSIGN_OR_RETURN(Tensor partials, temp(ctx, DType::kDouble, {channel_sum_partials(d.N, d.C, d.S)}));
  CUDA_RETURN_IF_ERROR(launch_channel_sums(ChannelSum::kGrad, X.data<float>(), dY.data<float>(), mean, inv, d.N, d.C,
                                           d.S, 1.0, partials.data<double>(), sum_dy, sum_dy_xhat, stream()));
  CUDA_OUTPUT(dX, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_batch_norm_grad_dx(X.data<float>(), dY.data<float>(), ctx.input(2).data<float>(), mean,
                                                 inv, sum_dy, sum_dy_xhat, training, d.N, d.C, d.S, dX.data<float>(),
                                                 stream()));
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    CUDA_OUTPUT(ds, ctx, 1);
    CUDA_RETURN_IF_ERROR(launch_store_float(sum_dy_xhat, ds.data<float>(), d.C, stream()));
  }
  if (ctx.num_outputs() > 2 && ctx.has_output(2)) {
    CUDA_OUTPUT(db, ctx, 2);
    CUDA_RETURN_IF_ERROR(launch_store_float(sum_dy, db.data<float>(), d.C, stream()));
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("BatchNormalization", 7, 1000, batch_norm);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "BatchNormalizationGrad", 1, 1000, batch_norm_grad);

}  // namespace ort_train::cuda
