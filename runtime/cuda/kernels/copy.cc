// CUDA registrations: Transpose, Expand, Tile, Slice/SliceGrad, Concat/Split,
// Pad/PadGrad (constant mode) as index-map copies (cuda_kernels/copy.cu).
#include <cstring>
#include <limits>

#include "cuda_kernels/copy.h"
#include "cuda_kernels/vector_math.h"
#include "graph/ops/slice.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

constexpr int64_t kNoWrap = std::numeric_limits<int64_t>::max();

// A plain strided view: dims walked row-major, element offset `offset` + sum(idx * strides).
Result<CopyMap> strided(const Dims& dims, const Dims& strides, int64_t offset) {
  if (dims.size() > static_cast<size_t>(kMaxDims))
    return unsupported("CUDA copies handle up to {} dimensions, got {}", kMaxDims, dims.size());
  CopyMap m;
  m.rank = static_cast<int>(dims.size());
  m.offset = offset;
  for (size_t d = 0; d < dims.size(); ++d) {
    m.out_dims[d] = dims[d];
    m.in_strides[d] = strides[d];
    m.mod[d] = kNoWrap;
    m.step[d] = 1;
  }
  return m;
}

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
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (perm.empty())
    for (int64_t d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
  Dims xs = row_major_strides(x.dims()), src(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) src[d] = xs[static_cast<size_t>(perm[d] < 0 ? perm[d] + x.rank() : perm[d])];
  ASSIGN_OR_RETURN(CopyMap m, strided(out.dims(), src, 0));
  return gather(x, out, m);
}

Status expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(IndexMap b, broadcast_map(x.dims(), out.dims()));
  ASSIGN_OR_RETURN(CopyMap m, strided(out.dims(), Dims(b.strides, b.strides + b.rank), 0));
  return gather(x, out, m);
}

Status tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(CopyMap m, strided(out.dims(), row_major_strides(x.dims()), 0));
  for (int64_t d = 0; d < x.rank(); ++d) m.mod[d] = x.dims()[d];
  return gather(x, out, m);
}

Result<std::vector<SliceAxis>> slice_params(KernelContext& ctx, const Dims& data_dims, size_t first_input,
                                            bool from_attributes) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (from_attributes) {
    starts = ctx.node().attr_ints("starts");
    ends = ctx.node().attr_ints("ends");
    axes = ctx.node().attr_ints("axes");
  } else {
    auto ints = [&](size_t i, std::vector<int64_t>& v) -> Status {
      if (!ctx.has_input(i)) return Status::Ok();
      ASSIGN_OR_RETURN(Tensor h, host_input(ctx, i));
      v = h.to_int64_vector();
      return Status::Ok();
    };
    RETURN_IF_ERROR(ints(first_input, starts));
    RETURN_IF_ERROR(ints(first_input + 1, ends));
    RETURN_IF_ERROR(ints(first_input + 2, axes));
    RETURN_IF_ERROR(ints(first_input + 3, steps));
  }
  return resolve_slice(ctx.node(), data_dims, starts, ends, axes, steps);
}

// The slice of a tensor with `dims` as a strided view: offset and strides.
Result<CopyMap> slice_view(const std::vector<SliceAxis>& r, const Dims& dims, const Dims& slice_dims) {
  Dims strides = row_major_strides(dims), src;
  int64_t offset = 0;
  for (size_t d = 0; d < r.size(); ++d) {
    offset += r[d].start * strides[d];
    src.push_back(strides[d] * r[d].step);
  }
  return strided(slice_dims, src, offset);
}

Status slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  CUDA_OUTPUT(out, ctx, 0);
  ASSIGN_OR_RETURN(auto r, slice_params(ctx, x.dims(), 1, ctx.opset() < 10));
  if (out.numel() == 0) return Status::Ok();
  ASSIGN_OR_RETURN(CopyMap m, slice_view(r, x.dims(), out.dims()));
  return gather(x, out, m);
}

Status slice_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  CUDA_OUTPUT(dx, ctx, 0);
  ASSIGN_OR_RETURN(auto r, slice_params(ctx, dx.dims(), 2, ctx.node().attr("starts") != nullptr));
  RETURN_IF_ERROR(zero(dx));
  if (dy.numel() == 0) return Status::Ok();
  ASSIGN_OR_RETURN(CopyMap m, slice_view(r, dx.dims(), dy.dims()));
  CUDA_RETURN_IF_ERROR(launch_scatter_copy(dy.raw(), dx.raw(), dy.numel(), bytes_of(dy), m, stream()));
  return Status::Ok();
}

// `part` sits at `offset` along `axis` of `whole`: its view inside whole.
Result<CopyMap> axis_view(const Tensor& part, const Tensor& whole, int64_t axis, int64_t offset) {
  Dims ws = row_major_strides(whole.dims());
  return strided(part.dims(), ws, offset * ws[static_cast<size_t>(axis)]);
}

Status concat(KernelContext& ctx) {
  CUDA_OUTPUT(out, ctx, 0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < 0) axis += out.rank();
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    if (in.numel() > 0) {
      ASSIGN_OR_RETURN(CopyMap m, axis_view(in, out, axis, offset));
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
        ASSIGN_OR_RETURN(CopyMap m, axis_view(part, in, axis, offset));
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
  std::vector<int64_t> pads;
  std::vector<uint8_t> value(8, 0);
  if (ctx.opset() < 11) {
    pads = ctx.node().attr_ints("pads");
    float v = ctx.node().attr_float("value", 0.f);
    if (x.dtype() != DType::kFloat && v != 0.f) return unsupported_cuda_dtype(ctx, x.dtype());
    std::memcpy(value.data(), &v, sizeof(float));
  } else {
    ASSIGN_OR_RETURN(Tensor p, host_input(ctx, 1));
    pads = p.to_int64_vector();
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
      ASSIGN_OR_RETURN(Tensor v, host_input(ctx, 2));
      std::memcpy(value.data(), v.raw(), std::min<size_t>(v.nbytes(), 8));
    }
    if (ctx.has_input(3))
      return unsupported("{}: the CUDA Pad kernel does not take the axes input", ctx.node().describe());
  }
  if (pads.size() != 2 * static_cast<size_t>(x.rank()))
    return invalid_argument("{}: pads has {} values for rank {}", ctx.node().describe(), pads.size(), x.rank());
  CUDA_RETURN_IF_ERROR(launch_fill(out.raw(), out.numel(), bytes_of(out), value.data(), stream()));
  if (x.numel() == 0) return Status::Ok();
  // Negative pads crop: the input's part that survives, written at max(pad, 0).
  Dims os = row_major_strides(out.dims()), xs = row_major_strides(x.dims()), part;
  int64_t out_offset = 0, in_offset = 0;
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t begin = pads[static_cast<size_t>(d)], end = pads[static_cast<size_t>(d + x.rank())];
    int64_t skip = begin < 0 ? -begin : 0;
    int64_t keep = x.dims()[d] - skip - (end < 0 ? -end : 0);
    if (keep <= 0) return Status::Ok();
    part.push_back(keep);
    out_offset += (begin > 0 ? begin : 0) * os[d];
    in_offset += skip * xs[d];
  }
  // Gather the surviving input into a dense scratch, then scatter it into the output.
  ASSIGN_OR_RETURN(Tensor dense, temp(ctx, x.dtype(), part));
  ASSIGN_OR_RETURN(CopyMap from, strided(part, xs, in_offset));
  RETURN_IF_ERROR(gather(x, dense, from));
  ASSIGN_OR_RETURN(CopyMap to, strided(part, os, out_offset));
  CUDA_RETURN_IF_ERROR(launch_scatter_copy(dense.raw(), out.raw(), dense.numel(), bytes_of(dense), to, stream()));
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
  int64_t rank = dx.rank();
  if (pads.size() != 2 * static_cast<size_t>(rank))
    return invalid_argument("{}: pads has {} values for rank {}", ctx.node().describe(), pads.size(), rank);
  RETURN_IF_ERROR(zero(dx));
  if (dx.numel() == 0) return Status::Ok();
  Dims ys = row_major_strides(dy.dims()), xs = row_major_strides(dx.dims()), part;
  int64_t y_offset = 0, x_offset = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t begin = pads[static_cast<size_t>(d)], end = pads[static_cast<size_t>(d + rank)];
    int64_t skip = begin < 0 ? -begin : 0;
    int64_t keep = dx.dims()[d] - skip - (end < 0 ? -end : 0);
    if (keep <= 0) return Status::Ok();
    part.push_back(keep);
    y_offset += (begin > 0 ? begin : 0) * ys[d];
    x_offset += skip * xs[d];
  }
  ASSIGN_OR_RETURN(Tensor dense, temp(ctx, dy.dtype(), part));
  ASSIGN_OR_RETURN(CopyMap from, strided(part, ys, y_offset));
  RETURN_IF_ERROR(gather(dy, dense, from));
  ASSIGN_OR_RETURN(CopyMap to, strided(part, xs, x_offset));
  CUDA_RETURN_IF_ERROR(launch_scatter_copy(dense.raw(), dx.raw(), dense.numel(), bytes_of(dense), to, stream()));
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("Transpose", 1, 1000, transpose);
ORT_REGISTER_CUDA_KERNEL("Expand", 8, 1000, expand);
ORT_REGISTER_CUDA_KERNEL("Tile", 6, 1000, tile);
ORT_REGISTER_CUDA_KERNEL("Slice", 1, 1000, slice);
ORT_REGISTER_CUDA_KERNEL("Concat", 4, 1000, concat);
ORT_REGISTER_CUDA_KERNEL("Split", 2, 1000, split);
ORT_REGISTER_CUDA_KERNEL("Pad", 2, 1000, pad);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "SliceGrad", 1, 1000, slice_grad);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "PadGrad", 1, 1000, pad_grad);

}  // namespace ort_train::cuda
