// CUDA registrations of IsNaN and IsInf. Kernel: cuda_kernels/is_nan_inf.cu.
#include "cuda_kernels/is_nan_inf.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

KernelFn float_class(bool nan) {
  return [nan](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    auto t = elem_type(x.dtype());
    if (!t || !dtype_is_float(x.dtype())) return unsupported_cuda_dtype(ctx, x.dtype());
    CUDA_OUTPUT(out, ctx, 0);
    CUDA_RETURN_IF_ERROR(launch_float_class(*t, x.raw(), out.data<bool>(), x.numel(), nan,
                                            ctx.node().attr_int("detect_negative", 1) != 0,
                                            ctx.node().attr_int("detect_positive", 1) != 0, stream()));
    return Status::Ok();
  };
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("IsNaN", 9, 1000, float_class(true));
ORT_REGISTER_CUDA_KERNEL("IsInf", 10, 1000, float_class(false));

}  // namespace ort_train::cuda
