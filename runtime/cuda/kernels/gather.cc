// CUDA registrations: Gather and GatherGrad (deterministic sorted sum under
// --deterministic, atomics otherwise). Kernels: cuda_kernels/gather.cu.
#include "cuda_kernels/gather.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

void around_axis(const Dims& dims, int64_t axis, int64_t& outer, int64_t& n, int64_t& inner) {
  int64_t rank = static_cast<int64_t>(dims.size());
  if (axis < 0) axis += rank;
  outer = inner = 1;
  n = dims[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= dims[d];
}

Status check_indices(KernelContext& ctx, const Tensor& idx) {
  if (idx.dtype() != DType::kInt64 && idx.dtype() != DType::kInt32) return unsupported_cuda_dtype(ctx, idx.dtype());
  return Status::Ok();
}

Status gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  RETURN_IF_ERROR(check_indices(ctx, idx));
  CUDA_OUTPUT(out, ctx, 0);
  int64_t outer, n, inner;
  around_axis(data.dims(), ctx.node().attr_int("axis", 0), outer, n, inner);
  CUDA_RETURN_IF_ERROR(launch_gather(data.raw(), static_cast<int>(dtype_size(data.dtype())), dtype_is_float(data.dtype()),
                                     idx.raw(), idx.dtype() == DType::kInt32, out.raw(), outer, n, idx.numel(), inner,
                                     index_fault_site(ctx), stream()));
  return Status::Ok();
}

Status gather_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& idx = ctx.input(2);
  RETURN_IF_ERROR(check_indices(ctx, idx));
  auto t = elem_type(dy.dtype());
  if (!t || (*t != ElemType::kF32 && *t != ElemType::kF64)) return unsupported_cuda_dtype(ctx, dy.dtype());
  CUDA_OUTPUT(dx, ctx, 0);
  int64_t outer, n, inner;
  around_axis(dx.dims(), ctx.node().attr_int("axis", 0), outer, n, inner);
  int64_t m = idx.numel();
  if (dy.numel() != outer * m * inner)
    return shape_error("{}: dY has {} elements, expected {}", ctx.node().describe(), dy.numel(), outer * m * inner);
  if (dx.nbytes()) CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dx.raw(), 0, dx.nbytes(), stream()));
  bool deterministic = context().deterministic;
  Tensor scratch;
  size_t bytes = 0;
  if (deterministic && m > 0) {
    bytes = gather_grad_scratch_bytes(m);
    ASSIGN_OR_RETURN(scratch, temp(ctx, DType::kUInt8, {static_cast<int64_t>(bytes)}));
  }
  CUDA_RETURN_IF_ERROR(launch_gather_grad(*t, dy.raw(), idx.raw(), idx.dtype() == DType::kInt32, dx.raw(), outer, n, m,
                                          inner, deterministic, scratch.defined() ? scratch.raw() : nullptr, bytes,
                                          index_fault_site(ctx), stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("Gather", 1, 1000, gather);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "GatherGrad", 1, 1000, gather_grad);

}  // namespace ort_train::cuda
