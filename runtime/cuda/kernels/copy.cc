// CUDA registrations: Transpose, Expand, Tile, Slice/SliceGrad, Concat/Split,
// Pad/PadGrad (constant mode) as index-map copies (cuda_kernels/copy.cu).
#include <cstring>
#include <algorithm>

#include "cuda_kernels/copy.h"
#include "cuda_kernels/vector_math.h"
#include "graph/ops/pad.h"
#include "graph/ops/slice.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

int bytes_of(const Tensor& t) { return static_cast<int>(dtype_size(t.dtype())); }

Status gather(const Tensor& src, Tensor& dst, const CopyMap& m) {
  CUDA_RETURN_IF_ERROR(launch_gather_copy(src.raw(), dst.raw(), dst.numel(), bytes_of(dst), m, stream()));
  return Status::Ok();
}

Status zero(Tensor& t) {
  if (t.nbytes()) CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t.raw(), 0, t.nbytes(), stream()));
  return Status::Ok();
}

Status transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(CopyMap m, transpose_map(x.dims(), ctx.node().attr_ints("perm"), out.dims()));
  return gather(x, out, m);
}

Status expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(CopyMap m, expand_map(x.dims(), out.dims()));
  return gather(x, out, m);
}

Status tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(CopyMap m, tile_map(x.dims(), out.dims()));
  return gather(x, out, m);
}

// The arguments are read on the host, copied from the device when they live only there.
Result<std::vector<SliceAxis>> slice_params(KernelContext& ctx, const Dims& data_dims, size_t first_input,
                                            bool from_attributes) {
  return resolve_node_slice(ctx.node(), data_dims, from_attributes, first_input,
                            [&](size_t i) -> Result<std::optional<std::vector<int64_t>>> {
                              if (!ctx.has_input(i)) return std::optional<std::vector<int64_t>>();
                              ASSIGN_OR_RETURN(Tensor h, host_input(ctx, i));
                              return std::optional<std::vector<int64_t>>(h.to_int64_vector());
                            });
}

Status slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(auto r, slice_params(ctx, x.dims(), 1, ctx.opset() < 10));
  if (out.numel() == 0) return Status::Ok();
  ASSIGN_OR_RETURN(CopyMap m, slice_map(r, x.dims(), out.dims()));
  return gather(x, out, m);
}

Status slice_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  CUDA_OUTPUT(dx, ctx, 0);
  ASSIGN_OR_RETURN(auto r, slice_params(ctx, dx.dims(), 2, ctx.node().attr("starts") != nullptr));
  RETURN_IF_ERROR(zero(dx));
  if (dy.numel() == 0) return Status::Ok();
  ASSIGN_OR_RETURN(CopyMap m, slice_map(r, dx.dims(), dy.dims()));
  CUDA_RETURN_IF_ERROR(launch_scatter_copy(dy.raw(), dx.raw(), dy.numel(), bytes_of(dy), m, stream()));
  return Status::Ok();
}

Status concat(KernelContext& ctx) {
  CUDA_OUTPUT(out, ctx, 0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += out.rank();
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    if (in.numel() > 0) {
      ASSIGN_OR_RETURN(CopyMap m, axis_map(in.dims(), out.dims(), axis, offset));
      CUDA_RETURN_IF_ERROR(launch_scatter_copy(in.raw(), out.raw(), in.numel(), bytes_of(in), m, stream()));
    }
    offset += in.dims()[static_cast<size_t>(axis)];
  }
  return Status::Ok();
}

Status split(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += in.rank();
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    int64_t size = ctx.shapes().output(i).shape->at(static_cast<size_t>(axis)).value;
    if (ctx.has_output(i)) {
      CUDA_OUTPUT(part, ctx, i);
      if (part.numel() > 0) {
        ASSIGN_OR_RETURN(CopyMap m, axis_map(part.dims(), in.dims(), axis, offset));
        RETURN_IF_ERROR(gather(in, part, m));
      }
    }
    offset += size;
  }
  return Status::Ok();
}

// Pad, constant mode: fill with the value, then write the input inside.
Status pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant")
    return unsupported("{}: the CUDA Pad kernel supports mode 'constant' only, got '{}'", ctx.node().describe(), mode);
  std::vector<uint8_t> value(8, 0);
  Tensor pads_in, axes_in;  // opset 11+: pads, then opset 18's optional axes, read on the host
  if (ctx.opset() < 11) {
    float v = ctx.node().attr_float("value", 0.f);
    if (x.dtype() != DType::kFloat && v != 0.f) return unsupported_cuda_dtype(ctx, x.dtype());
    std::memcpy(value.data(), &v, sizeof(float));
  } else {
    ASSIGN_OR_RETURN(pads_in, host_input(ctx, 1));
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
      ASSIGN_OR_RETURN(Tensor v, host_input(ctx, 2));
      std::memcpy(value.data(), v.raw(), std::min<size_t>(v.nbytes(), 8));
    }
    if (ctx.opset() >= 18 && ctx.has_input(3)) {
      ASSIGN_OR_RETURN(axes_in, host_input(ctx, 3));
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                   pad_amounts(ctx.node(), ctx.opset(), x.rank(), ctx.opset() >= 11 ? &pads_in : nullptr,
                               ctx.opset() >= 18 && ctx.has_input(3) ? &axes_in : nullptr));
  CUDA_RETURN_IF_ERROR(launch_fill(out.raw(), out.numel(), bytes_of(out), value.data(), stream()));
  if (x.numel() == 0) return Status::Ok();
  ASSIGN_OR_RETURN(PadInterior p, pad_interior(x.dims(), out.dims(), pads));
  if (p.empty) return Status::Ok();
  // Gather the surviving input into a dense scratch, then scatter it into the output.
  ASSIGN_OR_RETURN(Tensor dense, temp(ctx, x.dtype(), p.part));
  RETURN_IF_ERROR(gather(x, dense, p.in_view));
  CUDA_RETURN_IF_ERROR(launch_scatter_copy(dense.raw(), out.raw(), dense.numel(), bytes_of(dense), p.out_view, stream()));
  return Status::Ok();
}

// PadGrad, constant mode: the gradient of the kept input positions is dY there
// (pads are non-negative after the forward's resolution).
Status pad_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  CUDA_OUTPUT(dx, ctx, 0);
  std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant")
    return unsupported("{}: the CUDA PadGrad kernel supports mode 'constant' only, got '{}'", ctx.node().describe(), mode);
  std::vector<int64_t> pads = ctx.node().attr_ints("pads");
  RETURN_IF_ERROR(zero(dx));
  if (dx.numel() == 0) return Status::Ok();
  // dX's surviving block is read from dY where the forward wrote it.
  ASSIGN_OR_RETURN(PadInterior p, pad_interior(dx.dims(), dy.dims(), pads));
  if (p.empty) return Status::Ok();
  ASSIGN_OR_RETURN(Tensor dense, temp(ctx, dy.dtype(), p.part));
  RETURN_IF_ERROR(gather(dy, dense, p.out_view));
  CUDA_RETURN_IF_ERROR(launch_scatter_copy(dense.raw(), dx.raw(), dense.numel(), bytes_of(dense), p.in_view, stream()));
  return Status::Ok();
}

}  // namespace

// Transpose moves bytes (any stored dtype: autocast's 16-bit GEMM gradients transpose too).
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Transpose", 1, 1000, DeviceKind::kCuda, transpose, all_stored_dtypes());
ORT_REGISTER_CUDA_KERNEL("Expand", 8, 1000, expand);
ORT_REGISTER_CUDA_KERNEL("Tile", 6, 1000, tile);
ORT_REGISTER_CUDA_KERNEL("Slice", 1, 1000, slice);
ORT_REGISTER_CUDA_KERNEL("Concat", 4, 1000, concat);
ORT_REGISTER_CUDA_KERNEL("Split", 2, 1000, split);
ORT_REGISTER_CUDA_KERNEL("Pad", 2, 1000, pad);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "SliceGrad", 1, 1000, slice_grad);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "PadGrad", 1, 1000, pad_grad);

}  // namespace ort_train::cuda
