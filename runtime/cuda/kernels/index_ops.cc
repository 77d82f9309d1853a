// CUDA registrations of OneHot, EyeLike, Hardmax, ReverseSequence and
// Compress. Kernels: cuda_kernels/index_ops.cu; Compress gathers the
// condition's true positions with cuda_kernels/gather.cu.
#include <vector>

#include "cuda_kernels/gather.h"
#include "cuda_kernels/index_ops.h"
#include "graph/ops/compress.h"
#include "graph/ops/hardmax.h"
#include "graph/ops/reverse_sequence.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

// A host vector of int64 on the device.
Result<Tensor> device_int64s(KernelContext& ctx, const std::vector<int64_t>& v) {
  ASSIGN_OR_RETURN(Tensor t, temp(ctx, DType::kInt64, {static_cast<int64_t>(v.size())}));
  if (!v.empty()) RETURN_IF_ERROR(upload(t.raw(), v.data(), v.size() * sizeof(int64_t)));
  return t;
}

Status one_hot(KernelContext& ctx) {
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(Tensor depth_t, host_input(ctx, 1));
  ASSIGN_OR_RETURN(Tensor values, host_input(ctx, 2));
  ASSIGN_OR_RETURN(Tensor idx_host, host_input(ctx, 0));
  if (values.numel() != 2) return shape_error("{}: values must hold [off, on]", ctx.node().describe());
  const int64_t depth = static_cast<int64_t>(depth_t.to_double_vector()[0]);
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", -1), out.rank(), ctx.node()));
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < out.rank(); ++d) inner *= out.dims()[static_cast<size_t>(d)];
  ASSIGN_OR_RETURN(Tensor idx, device_int64s(ctx, idx_host.to_int64_vector()));
  const int64_t outer = depth * inner != 0 ? out.numel() / (depth * inner) : 0;
  CUDA_RETURN_IF_ERROR(launch_one_hot(static_cast<int>(dtype_size(out.dtype())), idx.data<int64_t>(), outer, depth,
                                      inner, values.raw(), out.raw(), stream()));
  return Status::Ok();
}

Status eye_like(KernelContext& ctx) {
  CUDA_OUTPUT(out, ctx, 0);
  auto t = elem_type(out.dtype());
  if (!t || out.rank() != 2) return unsupported_cuda_dtype(ctx, out.dtype());
  CUDA_RETURN_IF_ERROR(launch_eye_like(*t, out.dims()[0], out.dims()[1], ctx.node().attr_int("k", 0), out.raw(),
                                       stream()));
  return Status::Ok();
}

Status hardmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto t = elem_type(x.dtype());
  if (!t || !dtype_is_float(x.dtype())) return unsupported_cuda_dtype(ctx, x.dtype());
  ASSIGN_OR_RETURN(auto view, hardmax_view(ctx.node(), ctx.opset(), x.dims()));
  CUDA_OUTPUT(out, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_hardmax(*t, x.raw(), out.raw(), view[0], view[1], view[2], stream()));
  return Status::Ok();
}

Status reverse_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(Tensor lens_host, host_input(ctx, 1));
  ASSIGN_OR_RETURN(ReverseSequenceView v, reverse_sequence_view(ctx.node(), x.dims(), lens_host));
  ASSIGN_OR_RETURN(Tensor dev_lens, device_int64s(ctx, v.lens));
  CUDA_OUTPUT(out, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_reverse_sequence(static_cast<int>(dtype_size(x.dtype())), x.raw(), out.raw(), v.d0, v.d1,
                                               v.inner, v.batch_major, dev_lens.data<int64_t>(), stream()));
  return Status::Ok();
}

Status compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(Tensor cond, host_input(ctx, 1));
  ASSIGN_OR_RETURN(CompressView v, compress_view(ctx.node(), x.dims(), cond));
  ASSIGN_OR_RETURN(Tensor idx, device_int64s(ctx, v.keep));
  CUDA_OUTPUT(out, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_gather(x.raw(), static_cast<int>(dtype_size(x.dtype())), dtype_is_float(x.dtype()),
                                     idx.raw(), false, out.raw(), v.outer, v.n, static_cast<int64_t>(v.keep.size()),
                                     v.inner, IndexFaultSite{}, stream()));  // indices made above: all in range
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("OneHot", 9, 1000, one_hot);
ORT_REGISTER_CUDA_KERNEL("EyeLike", 9, 1000, eye_like);
ORT_REGISTER_CUDA_KERNEL("Hardmax", 1, 1000, hardmax);
ORT_REGISTER_CUDA_KERNEL("ReverseSequence", 10, 1000, reverse_sequence);
ORT_REGISTER_CUDA_KERNEL("Compress", 9, 1000, compress);

}  // namespace ort_train::cuda
