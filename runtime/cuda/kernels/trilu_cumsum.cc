// CUDA registrations: Trilu and CumSum. Kernels: cuda_kernels/trilu_cumsum.cu.
#include <algorithm>

#include "cuda_kernels/trilu_cumsum.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

Status trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  if (x.numel() == 0) return Status::Ok();
  int64_t n = x.dim(-2), m = x.dim(-1);
  int64_t k = 0;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(Tensor kt, host_input(ctx, 1));
    k = std::clamp<int64_t>(kt.to_int64_vector()[0], -n, m);
  }
  bool upper = ctx.node().attr_int("upper", 1) != 0;
  CUDA_RETURN_IF_ERROR(launch_trilu(x.raw(), out.raw(), static_cast<int>(dtype_size(x.dtype())), x.numel() / (n * m), n,
                                    m, k, upper, stream()));
  return Status::Ok();
}

Status cumsum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto t = elem_type(x.dtype());
  if (!t || *t == ElemType::kBool) return unsupported_cuda_dtype(ctx, x.dtype());
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(Tensor at, host_input(ctx, 1));
  int64_t axis = at.to_int64_vector()[0];
  if (axis < 0) axis += x.rank();
  int64_t n = x.dims()[static_cast<size_t>(axis)], inner = 1, outer = 1;
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dims()[d];
  for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[d];
  CUDA_RETURN_IF_ERROR(launch_cumsum(*t, x.raw(), out.raw(), outer, n, inner, ctx.node().attr_int("exclusive", 0) != 0,
                                     ctx.node().attr_int("reverse", 0) != 0, stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("Trilu", 14, 1000, trilu);
ORT_REGISTER_CUDA_KERNEL("CumSum", 11, 1000, cumsum);

}  // namespace ort_train::cuda
