// CUDA registrations of OneHot, EyeLike, Hardmax, ReverseSequence and
// Compress. Kernels: cuda_kernels/index_ops.cu; Compress gathers the
// condition's true positions with cuda_kernels/gather.cu.
#include <vector>

#include "cuda_kernels/gather.h"
#include "cuda_kernels/index_ops.h"
#include "graph/ops/hardmax.h"
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
  std::vector<int64_t> lens = lens_host.to_int64_vector();
  const bool batch_major = ctx.node().attr_int("batch_axis", 1) == 0;
  const int64_t d0 = x.dims()[0], d1 = x.dims()[1];
  const int64_t batch = batch_major ? d0 : d1, steps = batch_major ? d1 : d0;
  if (static_cast<int64_t>(lens.size()) != batch)
    return shape_error("{}: sequence_lens has {} entries for a batch of {}", ctx.node().describe(), lens.size(), batch);
  for (int64_t l : lens)
    if (l < 0 || l > steps) return invalid_argument("{}: sequence length {} outside [0, {}]", ctx.node().describe(), l, steps);
  ASSIGN_OR_RETURN(Tensor dev_lens, device_int64s(ctx, lens));
  CUDA_OUTPUT(out, ctx, 0);
  const int64_t inner = d0 * d1 != 0 ? x.numel() / (d0 * d1) : 0;
  CUDA_RETURN_IF_ERROR(launch_reverse_sequence(static_cast<int>(dtype_size(x.dtype())), x.raw(), out.raw(), d0, d1,
                                               inner, batch_major, dev_lens.data<int64_t>(), stream()));
  return Status::Ok();
}

Status compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(Tensor cond, host_input(ctx, 1));
  std::vector<int64_t> keep;
  const std::vector<int64_t> c = cond.to_int64_vector();
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i]) keep.push_back(static_cast<int64_t>(i));
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (const Attribute* a = ctx.node().attr("axis")) {
    ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a->i, x.rank(), ctx.node()));
    n = x.dims()[static_cast<size_t>(axis)];
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dims()[static_cast<size_t>(d)];
  }
  if (static_cast<int64_t>(c.size()) > n) return shape_error("{}: the condition is longer than the axis", ctx.node().describe());
  ASSIGN_OR_RETURN(Tensor idx, device_int64s(ctx, keep));
  CUDA_OUTPUT(out, ctx, 0);
  CUDA_RETURN_IF_ERROR(launch_gather(x.raw(), static_cast<int>(dtype_size(x.dtype())), dtype_is_float(x.dtype()),
                                     idx.raw(), false, out.raw(), outer, n, static_cast<int64_t>(keep.size()), inner,
                                     stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("OneHot", 9, 1000, one_hot);
ORT_REGISTER_CUDA_KERNEL("EyeLike", 9, 1000, eye_like);
ORT_REGISTER_CUDA_KERNEL("Hardmax", 1, 1000, hardmax);
ORT_REGISTER_CUDA_KERNEL("ReverseSequence", 10, 1000, reverse_sequence);
ORT_REGISTER_CUDA_KERNEL("Compress", 9, 1000, compress);

}  // namespace ort_train::cuda
