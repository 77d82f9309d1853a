#include "runtime/cuda/kernels/common.h"

#include "cuda_kernels/elementwise.h"

namespace ort_train::cuda {

std::optional<ElemType> elem_type(DType t) {
  switch (t) {
    case DType::kFloat: return ElemType::kF32;
    case DType::kDouble: return ElemType::kF64;
    case DType::kInt32: return ElemType::kI32;
    case DType::kInt64: return ElemType::kI64;
    case DType::kBool: return ElemType::kBool;
    default: return std::nullopt;
  }
}

Status add_bias_into(KernelContext& ctx, const Tensor& x, const Tensor& b, void* out) {
  auto t = elem_type(x.dtype());
  if (!t || !dtype_is_float(x.dtype()) || b.dtype() != x.dtype() || x.dims().empty() || b.dims().size() != 1 ||
      b.dims()[0] != x.dims().back())
    return invalid_argument("{}: needs a 1-D bias of X's dtype and last dim", ctx.node().describe());
  ASSIGN_OR_RETURN(IndexMap xm, broadcast_map(x.dims(), x.dims()));
  ASSIGN_OR_RETURN(IndexMap bm, broadcast_map(b.dims(), x.dims()));
  CUDA_RETURN_IF_ERROR(launch_binary(BinaryOp::kAdd, *t, x.raw(), b.raw(), out, x.numel(), false, xm, bm, stream()));
  return Status::Ok();
}

std::optional<ElemType> stored_elem_type(DType t) {
  if (t == DType::kFloat16) return ElemType::kF16;
  if (t == DType::kBFloat16) return ElemType::kBF16;
  return elem_type(t);
}

}  // namespace ort_train::cuda
