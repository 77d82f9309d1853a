// CPU kernels: Expand, Tile and Pad. Expand and Tile are one strided copy each
// (stride 0 repeats a source element or block); constant Pad fills the output and
// copies the input into its interior; reflect/edge/wrap Pad maps every output index
// to a source index per dim and gathers.
#include <string>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/pad_source.h"
#include "runtime/kernel.h"
#include "graph/ops/pad.h"

namespace ort_train {

namespace {

Status expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  strided_copy(dtype_size(x.dtype()), out.dims(), x.raw(), broadcast_strides(x.dims(), out.dims()), out.raw(),
               contiguous_strides(out.dims()));
  return Status::Ok();
}

// Output dim d of size reps[d] * n[d] is walked as (rep, i): the source ignores rep
// (stride 0) and the destination steps a whole block of n[d] per rep.
Status tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  std::vector<int64_t> xs = contiguous_strides(x.dims()), os = contiguous_strides(out.dims());
  Dims dims;
  std::vector<int64_t> src_strides, dst_strides;
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t n = x.dims()[d];
    dims.insert(dims.end(), {n == 0 ? 0 : out.dims()[d] / n, n});
    src_strides.insert(src_strides.end(), {0, xs[d]});
    dst_strides.insert(dst_strides.end(), {n * os[d], os[d]});
  }
  strided_copy(dtype_size(x.dtype()), dims, x.raw(), src_strides, out.raw(), dst_strides);
  return Status::Ok();
}

// The fill value in x's dtype: constant_value input (opset 11+) or `value` attribute.
Tensor pad_value(const KernelContext& ctx, DType dtype) {
  if (ctx.opset() >= 11) {
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) return ctx.input(2);
    return Tensor::host(dtype, {});
  }
  // Pad-2 takes float types only, so the float attribute converts exactly.
  float v = ctx.node().attr_float("value", 0.f);
  if (dtype == DType::kDouble) return Tensor::from_vector<double>({}, {v});
  if (dtype == DType::kFloat) return Tensor::from_vector<float>({}, {v});
  return Tensor::host(dtype, {});
}

Status pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  int64_t rank = x.rank();
  std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return invalid_argument("{}: unknown pad mode '{}'", ctx.node().describe(), mode);
  const Tensor* axes = ctx.opset() >= 18 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
  ASSIGN_OR_RETURN(auto p, pad_amounts(ctx.node(), ctx.opset(), rank, ctx.opset() >= 11 ? &ctx.input(1) : nullptr, axes));
  size_t es = dtype_size(x.dtype());
  if (out.numel() == 0) return Status::Ok();
  if (mode == "constant") {
    Tensor value = pad_value(ctx, x.dtype());
    if (value.dtype() != x.dtype())
      return invalid_argument("{}: constant_value is {} but the data is {}", ctx.node().describe(),
                              dtype_name(value.dtype()), dtype_name(x.dtype()));
    fill_elements(es, out.raw(), out.numel(), value.raw());
    // The part of x that survives (negative pads crop) lands at max(pad, 0) in the output.
    std::vector<int64_t> xs = contiguous_strides(x.dims()), os = contiguous_strides(out.dims());
    Dims kept(static_cast<size_t>(rank));
    int64_t src_off = 0, dst_off = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t begin = p[d], end = p[d + rank];
      kept[d] = std::max<int64_t>(0, x.dims()[d] - std::max<int64_t>(0, -begin) - std::max<int64_t>(0, -end));
      src_off += std::max<int64_t>(0, -begin) * xs[d];
      dst_off += std::max<int64_t>(0, begin) * os[d];
    }
    if (num_elements(kept) > 0)
      strided_copy(es, kept, static_cast<const char*>(x.raw()) + src_off * static_cast<int64_t>(es), xs,
                   static_cast<char*>(out.raw()) + dst_off * static_cast<int64_t>(es), os);
    return Status::Ok();
  }
  if (x.numel() == 0)
    return invalid_argument("{}: cannot {}-pad an empty axis", ctx.node().describe(), mode);
  std::vector<std::vector<int64_t>> tables(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < out.dims()[d]; ++i) tables[d].push_back(pad_source(i - p[d], x.dims()[d], mode));
  gather_by_tables(es, out.dims(), tables, x.raw(), x.dims(), out.raw());
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Expand", 8, 1000, expand);
ORT_REGISTER_CPU_KERNEL("Tile", 6, 1000, tile);
ORT_REGISTER_CPU_KERNEL("Pad", 2, 1000, pad);

}  // namespace ort_train
