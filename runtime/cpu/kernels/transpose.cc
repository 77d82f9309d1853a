// CPU kernel: Transpose as a strided copy (runs that stay contiguous become memcpy).
#include "runtime/cpu/copy.h"
#include "runtime/kernel.h"

namespace ort_train {

Result<std::vector<int64_t>> transpose_perm(const Node& node, int64_t rank);

namespace {

Status transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  ASSIGN_OR_RETURN(auto perm, transpose_perm(ctx.node(), x.rank()));
  std::vector<int64_t> in_strides = contiguous_strides(x.dims());
  std::vector<int64_t> src_strides;
  for (int64_t p : perm) src_strides.push_back(in_strides[p]);
  strided_copy(dtype_size(x.dtype()), out.dims(), x.raw(), src_strides, out.raw(), contiguous_strides(out.dims()));
  return Status::Ok();
}

}  // namespace

// A strided copy of bytes: every stored dtype, the 16-bit floats included.
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Transpose", 1, 1000, DeviceKind::kCpu, transpose, all_stored_dtypes());

}  // namespace ort_train
