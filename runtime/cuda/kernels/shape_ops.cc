// CUDA registrations of ops that move no data or make small tensors: views
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity alias their input), values
// the shape rule computes on the host (Shape, Size, Constant: the executor
// uploads them when a device kernel reads them), ConstantOfShape and Range.
#include <cstring>
#include <vector>

#include "cuda_kernels/vector_math.h"
#include "graph/dispatch.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

Status view(KernelContext& ctx) {
  ctx.alias_output(0, ctx.input(0));
  return Status::Ok();
}

// The rule computed the value; the executor binds it (kernel leaves the output unset).
Status value_from_rule(KernelContext&) { return Status::Ok(); }

Status constant_of_shape(KernelContext& ctx) {
  CUDA_OUTPUT(out, ctx, 0);
  std::vector<uint8_t> zero(16, 0);
  const void* value = zero.data();
  if (const Attribute* a = ctx.node().attr("value")) value = a->t.raw();
  CUDA_RETURN_IF_ERROR(launch_fill(out.raw(), out.numel(), static_cast<int>(dtype_size(out.dtype())), value, stream()));
  return Status::Ok();
}

// Start and delta are scalars the executor holds on the host (constants or
// shape arithmetic); the sequence is written on the host and uploaded.
Status range(KernelContext& ctx) {
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(Tensor start, host_input(ctx, 0));
  ASSIGN_OR_RETURN(Tensor delta, host_input(ctx, 2));
  Tensor h = Tensor::host(out.dtype(), out.dims());
  bool ok = dispatch_numeric(out.dtype(), [&]<typename T>() {
    T s = start.data<T>()[0], d = delta.data<T>()[0];
    T* o = h.data<T>();
    for (int64_t i = 0; i < h.numel(); ++i) o[i] = static_cast<T>(s + static_cast<T>(i) * d);
  });
  if (!ok) return unsupported_cuda_dtype(ctx, out.dtype());
  return upload(out.raw(), h.raw(), h.nbytes());  // staged: h may die right after
}

}  // namespace

// Views and rule-computed values never compute on the data: any stored dtype.
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Identity", 1, 1000, DeviceKind::kCuda, view, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Reshape", 5, 1000, DeviceKind::kCuda, view, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Flatten", 1, 1000, DeviceKind::kCuda, view, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Squeeze", 1, 1000, DeviceKind::kCuda, view, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Unsqueeze", 1, 1000, DeviceKind::kCuda, view, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Shape", 1, 1000, DeviceKind::kCuda, value_from_rule, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Size", 1, 1000, DeviceKind::kCuda, value_from_rule, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Constant", 1, 1000, DeviceKind::kCuda, value_from_rule, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "ConstantOfShape", 9, 1000, DeviceKind::kCuda, constant_of_shape, all_stored_dtypes());
ORT_REGISTER_CUDA_KERNEL("Range", 11, 1000, range);

}  // namespace ort_train::cuda
