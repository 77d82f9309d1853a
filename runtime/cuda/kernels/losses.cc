// CUDA registrations: SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and
// their gradients. The log-softmax over classes is the Softmax kernel over
// [N, C, D]; kernels: cuda_kernels/losses.cu, cuda_kernels/softmax.cu.
#include "cuda_kernels/losses.h"
#include "cuda_kernels/softmax.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

Result<LossArgs> loss_args(KernelContext& ctx, const Tensor& ref, const Tensor& labels, const Tensor* weights) {
  LossArgs a;
  if (!dtype_is_float(ref.dtype()) || !elem_type(ref.dtype())) return unsupported_cuda_dtype(ctx, ref.dtype());
  if (labels.dtype() != DType::kInt64 && labels.dtype() != DType::kInt32)
    return unsupported_cuda_dtype(ctx, labels.dtype());
  a.t = *elem_type(ref.dtype());
  a.labels = labels.raw();
  a.labels_int32 = labels.dtype() == DType::kInt32;
  a.weights = weights ? weights->raw() : nullptr;
  std::string reduction = ctx.node().attr_string("reduction", "mean");
  if (reduction == "none") a.reduction = LossReduction::kNone;
  else if (reduction == "sum") a.reduction = LossReduction::kSum;
  else if (reduction == "mean") a.reduction = LossReduction::kMean;
  else return invalid_argument("{}: reduction must be none, sum or mean, got '{}'", ctx.node().describe(), reduction);
  if (const Attribute* ig = ctx.node().attr("ignore_index")) {
    a.has_ignore = true;
    a.ignore_index = ig->i;
  }
  a.N = ref.dims()[0];
  a.C = ref.dims()[1];
  a.D = a.N * a.C == 0 ? 0 : ref.numel() / (a.N * a.C);
  if (labels.numel() != a.N * a.D)
    return shape_error("{}: {} labels for {} score rows", ctx.node().describe(), labels.numel(), a.N * a.D);
  return a;
}

template <bool kSoftmax>
Status loss(KernelContext& ctx) {
  const Tensor& scores = ctx.input(0);
  const Tensor* weights = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  ASSIGN_OR_RETURN(LossArgs a, loss_args(ctx, scores, ctx.input(1), weights));
  a.fault = index_fault_site(ctx);
  CUDA_OUTPUT(out, ctx, 0);
  Tensor logp = scores;
  if (kSoftmax) {
    if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
      CUDA_OUTPUT(lp, ctx, 1);
      logp = lp;
    } else {
      ASSIGN_OR_RETURN(logp, temp(ctx, scores.dtype(), scores.dims()));
    }
    CUDA_RETURN_IF_ERROR(launch_softmax(true, a.t, scores.raw(), logp.raw(), a.N, a.C, a.D, stream()));
  }
  CUDA_RETURN_IF_ERROR(launch_nll_forward(a, logp.raw(), out.raw(), stream()));
  return Status::Ok();
}

template <bool kSoftmax>
Status loss_grad(KernelContext& ctx) {
  const Tensor& ref = ctx.input(1);
  const Tensor* weights = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  ASSIGN_OR_RETURN(LossArgs a, loss_args(ctx, ref, ctx.input(2), weights));
  CUDA_OUTPUT(dx, ctx, 0);
  ASSIGN_OR_RETURN(Tensor scratch, temp(ctx, DType::kDouble, {1}));
  CUDA_RETURN_IF_ERROR(launch_loss_grad(a, kSoftmax, ctx.input(0).raw(), ref.raw(), dx.raw(), scratch.data<double>(), stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("SoftmaxCrossEntropyLoss", 12, 1000, loss<true>);
ORT_REGISTER_CUDA_KERNEL("NegativeLogLikelihoodLoss", 12, 1000, loss<false>);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "SoftmaxCrossEntropyLossGrad", 1, 1000, loss_grad<true>);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "NegativeLogLikelihoodLossGrad", 1, 1000, loss_grad<false>);

}  // namespace ort_train::cuda
