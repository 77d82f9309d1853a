// CUDA registrations: Reduce* over any axes and SumTo (the autodiff driver's
// sum of a broadcast gradient back to its input's shape). Kernels: cuda_kernels/reduce.cu.
#include "cuda_kernels/elementwise.h"
#include "cuda_kernels/reduce.h"
#include "graph/ops/reduce.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

Status reduce_into(KernelContext& ctx, ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, Tensor& out) {
  auto t = stored_elem_type(x.dtype());  // 16-bit floats too, summed in float32
  if (!t || *t == ElemType::kBool) return unsupported_cuda_dtype(ctx, x.dtype());
  ASSIGN_OR_RETURN(ReduceMaps m, reduce_maps(x.dims(), reduced));
  CUDA_RETURN_IF_ERROR(launch_reduce(op, *t, x.raw(), out.raw(), out.numel(), m.count, m.kept, m.reduced, stream()));
  return Status::Ok();
}

KernelFn reduce(ReduceOp op) {
  return [op](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    Tensor axes_host;
    bool has_axes = ctx.has_input(1);
    if (has_axes) {
      ASSIGN_OR_RETURN(axes_host, host_input(ctx, 1));
    }
    ASSIGN_OR_RETURN(auto r, resolve_reduce_axes(ctx.node(), ctx.opset(), x.rank(), has_axes ? &axes_host : nullptr, has_axes));
    if (r.noop) {
      ctx.alias_output(0, x);
      return Status::Ok();
    }
    CUDA_OUTPUT(out, ctx, 0);
    return reduce_into(ctx, op, x, r.reduced, out);
  };
}

// ReduceLogSum: log of ReduceSum (of the input itself with noop_with_empty_axes).
Status reduce_log_sum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto t = elem_type(x.dtype());
  if (!t || !dtype_is_float(x.dtype())) return unsupported_cuda_dtype(ctx, x.dtype());
  Tensor axes_host;
  bool has_axes = ctx.has_input(1);
  if (has_axes) {
    ASSIGN_OR_RETURN(axes_host, host_input(ctx, 1));
  }
  ASSIGN_OR_RETURN(auto r, resolve_reduce_axes(ctx.node(), ctx.opset(), x.rank(), has_axes ? &axes_host : nullptr, has_axes));
  CUDA_OUTPUT(out, ctx, 0);
  if (r.noop) {
    CUDA_RETURN_IF_ERROR(launch_unary(UnaryOp::kLog, *t, x.raw(), out.raw(), x.numel(), 0.f, stream()));
    return Status::Ok();
  }
  RETURN_IF_ERROR(reduce_into(ctx, ReduceOp::kSum, x, r.reduced, out));
  CUDA_RETURN_IF_ERROR(launch_unary(UnaryOp::kLog, *t, out.raw(), out.raw(), out.numel(), 0.f, stream()));
  return Status::Ok();
}

Status sum_to(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Dims target = dims_from_shape(*ctx.shapes().output(0).shape);
  if (target == x.dims()) {
    ctx.alias_output(0, x);
    return Status::Ok();
  }
  CUDA_OUTPUT(out, ctx, 0);
  return reduce_into(ctx, ReduceOp::kSum, x, sum_to_axes(x.dims(), target), out);
}

// The sums also in float16 and bfloat16 (float32 math): autocast's bias gradients.
const std::vector<DType> kSumDtypes{DType::kFloat, DType::kDouble, DType::kInt32, DType::kInt64, DType::kFloat16,
                                    DType::kBFloat16};

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES("", "ReduceSum", 1, 1000, DeviceKind::kCuda, reduce(ReduceOp::kSum), kSumDtypes);
ORT_REGISTER_CUDA_KERNEL("ReduceMean", 1, 1000, reduce(ReduceOp::kMean));
ORT_REGISTER_CUDA_KERNEL("ReduceMax", 1, 1000, reduce(ReduceOp::kMax));
ORT_REGISTER_CUDA_KERNEL("ReduceMin", 1, 1000, reduce(ReduceOp::kMin));
ORT_REGISTER_CUDA_KERNEL("ReduceProd", 1, 1000, reduce(ReduceOp::kProd));
ORT_REGISTER_CUDA_KERNEL("ReduceSumSquare", 1, 1000, reduce(ReduceOp::kSumSquare));
ORT_REGISTER_CUDA_KERNEL("ReduceL1", 1, 1000, reduce(ReduceOp::kL1));
ORT_REGISTER_CUDA_KERNEL("ReduceL2", 1, 1000, reduce(ReduceOp::kL2));
ORT_REGISTER_CUDA_KERNEL("ReduceLogSum", 1, 1000, reduce_log_sum);
ORT_REGISTER_CUDA_KERNEL("ReduceLogSumExp", 1, 1000, reduce(ReduceOp::kLogSumExp));
ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "SumTo", 1, 1000, DeviceKind::kCuda, sum_to, kSumDtypes);

}  // namespace ort_train::cuda
