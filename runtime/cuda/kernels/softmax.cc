// CUDA registrations: Softmax, LogSoftmax (opset < 13: coerced to 2-D at axis),
// com.ort_train BiasSoftmax (the broadcast add, then the softmax in place)
// and SoftmaxGrad, LogSoftmaxGrad. Kernels: cuda_kernels/softmax.cu.
#include <algorithm>

#include "cuda_kernels/elementwise.h"
#include "cuda_kernels/softmax.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

// [outer, n, inner] around `axis`; `coerce` normalizes every dim from axis on.
void split_at_axis(const Dims& dims, int64_t axis, bool coerce, int64_t& outer, int64_t& n, int64_t& inner) {
  int64_t rank = static_cast<int64_t>(dims.size());
  if (axis < 0) axis += rank;
  axis = std::clamp<int64_t>(axis, 0, rank);
  outer = n = inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  if (coerce) {
    for (int64_t d = axis; d < rank; ++d) n *= dims[d];
  } else {
    n = axis < rank ? dims[axis] : 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= dims[d];
  }
}

template <bool kLog>
Status softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!dtype_is_float(x.dtype()) || !elem_type(x.dtype())) return unsupported_cuda_dtype(ctx, x.dtype());
  CUDA_OUTPUT(y, ctx, 0);
  int64_t outer, n, inner;
  split_at_axis(x.dims(), ctx.node().attr_int("axis", ctx.opset() >= 13 ? -1 : 1), ctx.opset() < 13, outer, n, inner);
  CUDA_RETURN_IF_ERROR(launch_softmax(kLog, *elem_type(x.dtype()), x.raw(), y.raw(), outer, n, inner, stream()));
  return Status::Ok();
}

// Softmax(X + B) over the last axis: the add as the Add node made it, then
// the rows normalized in place (softmax_rows reads a row before writing it).
Status bias_softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& b = ctx.input(1);
  auto t = elem_type(x.dtype());
  if (!dtype_is_float(x.dtype()) || !t || b.dtype() != x.dtype()) return unsupported_cuda_dtype(ctx, x.dtype());
  CUDA_OUTPUT(y, ctx, 0);
  if (y.dims().empty()) return unsupported_cuda_dtype(ctx, x.dtype());
  if (y.numel() == 0) return Status::Ok();
  ASSIGN_OR_RETURN(IndexMap xm, broadcast_map(x.dims(), y.dims()));
  ASSIGN_OR_RETURN(IndexMap bm, broadcast_map(b.dims(), y.dims()));
  CUDA_RETURN_IF_ERROR(launch_binary(BinaryOp::kAdd, *t, x.raw(), b.raw(), y.raw(), y.numel(), false, xm, bm, stream()));
  int64_t n = y.dims().back();
  CUDA_RETURN_IF_ERROR(launch_softmax(false, *t, y.raw(), y.raw(), y.numel() / n, n, 1, stream()));
  return Status::Ok();
}

template <bool kLog>
Status softmax_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (!dtype_is_float(dy.dtype()) || !elem_type(dy.dtype())) return unsupported_cuda_dtype(ctx, dy.dtype());
  CUDA_OUTPUT(dx, ctx, 0);
  int64_t outer, n, inner;
  split_at_axis(dy.dims(), ctx.node().attr_int("axis", -1), ctx.node().attr_int("coerce_2d", 0) != 0, outer, n, inner);
  CUDA_RETURN_IF_ERROR(
      launch_softmax_grad(kLog, *elem_type(dy.dtype()), dy.raw(), y.raw(), dx.raw(), outer, n, inner, stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL_INPLACE("Softmax", 1, 1000, softmax<false>);
ORT_REGISTER_CUDA_KERNEL_INPLACE("LogSoftmax", 1, 1000, softmax<true>);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "BiasSoftmax", 1, 1000, bias_softmax);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "SoftmaxGrad", 1, 1000, softmax_grad<false>);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "LogSoftmaxGrad", 1, 1000, softmax_grad<true>);

}  // namespace ort_train::cuda
