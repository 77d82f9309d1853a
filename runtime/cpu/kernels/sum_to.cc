// CPU kernel of com.ort_train::SumTo (shape rule in graph/ops/sum_to.cc).
#include "graph/ops/reduce.h"
#include "runtime/cpu/kernels/reduce.h"
#include "runtime/kernel.h"
#include "runtime/vector_ops.h"

namespace ort_train {
namespace {

Status sum_to(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Dims target = dims_from_shape(*ctx.shapes().output(0).shape);
  if (target == x.dims()) {
    ctx.alias_output(0, x);
    return Status::Ok();
  }
  std::vector<bool> axes = sum_to_axes(x.dims(), target);
  if (dtype_is_half(x.dtype())) {
    // Summed in float32 and rounded once (autocast's 16-bit GEMM gradients
    // over broadcast batch dims).
    Tensor wide = Tensor::host(DType::kFloat, x.dims()), sum = Tensor::host(DType::kFloat, target);
    ASSIGN_OR_RETURN(VectorOps * ops, vector_ops(DeviceKind::kCpu));
    RETURN_IF_ERROR(ops->convert(x, wide));
    if (!sum_axes(wide, axes, sum)) return unsupported_dtype(ctx, x.dtype());
    RETURN_IF_ERROR(ops->convert(sum, ctx.output(0)));
    return Status::Ok();
  }
  return sum_axes(x, axes, ctx.output(0)) ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

const std::vector<DType> kSumToDtypes{DType::kFloat, DType::kDouble, DType::kBFloat16, DType::kFloat16};

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "SumTo", 1, 1000, DeviceKind::kCpu, sum_to, kSumToDtypes);

}  // namespace ort_train
