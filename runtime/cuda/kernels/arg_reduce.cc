// CUDA registrations of ArgMax and ArgMin. Kernel: cuda_kernels/arg_reduce.cu.
#include "cuda_kernels/arg_reduce.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

KernelFn arg_reduce(bool is_max) {
  return [is_max](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    auto t = elem_type(x.dtype());
    if (!t || *t == ElemType::kBool) return unsupported_cuda_dtype(ctx, x.dtype());
    const int64_t rank = x.rank();
    if (rank == 0) return invalid_argument("{}: needs an input of rank >= 1", ctx.node().describe());
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), rank, ctx.node()));
    const int64_t n = x.dims()[static_cast<size_t>(axis)];
    CUDA_OUTPUT(out, ctx, 0);
    if (n == 0 && out.numel() > 0)
      return invalid_argument("{}: cannot take the {} of an empty axis", ctx.node().describe(), ctx.node().op_type);
    int64_t inner = 1, outer = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dims()[static_cast<size_t>(d)];
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[static_cast<size_t>(d)];
    CUDA_RETURN_IF_ERROR(launch_arg_reduce(*t, x.raw(), out.data<int64_t>(), outer, n, inner, is_max,
                                           ctx.node().attr_int("select_last_index", 0) != 0, stream()));
    return Status::Ok();
  };
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("ArgMax", 1, 1000, arg_reduce(true));
ORT_REGISTER_CUDA_KERNEL("ArgMin", 1, 1000, arg_reduce(false));

}  // namespace ort_train::cuda
