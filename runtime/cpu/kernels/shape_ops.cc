// CPU kernels: Shape, Size, Constant (values come from their shape rules),
// ConstantOfShape, Range, Identity (aliases its input).
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/copy.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// The rule computed the value; the executor takes it from there.
Status value_from_rule(KernelContext& ctx) {
  ctx.set_output(0, *ctx.shapes().output(0).value);
  return Status::Ok();
}

Status constant_of_shape(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  if (const Attribute* a = ctx.node().attr("value")) fill_elements(dtype_size(out.dtype()), out.raw(), out.numel(), a->t.raw());
  else std::memset(out.raw(), 0, out.nbytes());
  return Status::Ok();
}

Status range(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  bool ok = dispatch_numeric(out.dtype(), [&]<typename T>() {
    T start = ctx.input(0).data<T>()[0];
    T delta = ctx.input(2).data<T>()[0];
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, out.dtype());
}

Status identity(KernelContext& ctx) {
  ctx.alias_output(0, ctx.input(0));
  return Status::Ok();
}

}  // namespace

// Shape, Size, Constant, ConstantOfShape and Identity never compute on the data: any stored dtype.
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Shape", 1, 1000, DeviceKind::kCpu, value_from_rule, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Size", 1, 1000, DeviceKind::kCpu, value_from_rule, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Constant", 1, 1000, DeviceKind::kCpu, value_from_rule, all_stored_dtypes());
ORT_REGISTER_KERNEL_FOR_DTYPES("", "ConstantOfShape", 9, 1000, DeviceKind::kCpu, constant_of_shape, all_stored_dtypes());
ORT_REGISTER_CPU_KERNEL("Range", 11, 1000, range);
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Identity", 1, 1000, DeviceKind::kCpu, identity, all_stored_dtypes());

}  // namespace ort_train
