// CPU kernels: Expand, Tile and Pad, each as a per-dim index table
// (output index -> source index, or -1 for Pad's constant) fed to gather_by_tables.
#include <string>

#include "runtime/cpu/copy.h"
#include "runtime/kernel.h"

namespace ort_train {

Result<std::vector<int64_t>> pad_amounts(const Node& node, int64_t opset, int64_t rank, const Tensor* pads,
                                         const Tensor* axes);

namespace {

Status expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  Dims src(out.rank() - x.rank(), 1);
  src.insert(src.end(), x.dims().begin(), x.dims().end());
  std::vector<std::vector<int64_t>> tables(src.size());
  for (size_t d = 0; d < src.size(); ++d)
    for (int64_t i = 0; i < out.dims()[d]; ++i) tables[d].push_back(src[d] == 1 ? 0 : i);
  gather_by_tables(dtype_size(x.dtype()), out.dims(), tables, x.raw(), src, out.raw(), nullptr);
  return Status::Ok();
}

Status tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  std::vector<std::vector<int64_t>> tables(x.dims().size());
  for (size_t d = 0; d < tables.size(); ++d)
    for (int64_t i = 0; i < out.dims()[d]; ++i) tables[d].push_back(i % x.dims()[d]);
  gather_by_tables(dtype_size(x.dtype()), out.dims(), tables, x.raw(), x.dims(), out.raw(), nullptr);
  return Status::Ok();
}

// Source index for output position j - begin along an axis of size n, or -1.
int64_t pad_source(int64_t j, int64_t n, const std::string& mode) {
  if (j >= 0 && j < n) return j;
  if (mode == "constant" || n == 0) return -1;
  if (mode == "edge") return j < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((j % n) + n) % n;
  // reflect: mirror without repeating the edge element
  if (n == 1) return 0;
  int64_t period = 2 * (n - 1);
  int64_t m = ((j % period) + period) % period;
  return m < n ? m : period - m;
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
  // The fill value, converted to the tensor's dtype.
  Tensor fill = Tensor::host(x.dtype(), {});
  if (ctx.opset() >= 11 && ctx.has_input(2) && ctx.input(2).numel() > 0) {
    fill = ctx.input(2).clone();
  } else if (ctx.opset() < 11) {
    float v = ctx.node().attr_float("value", 0.f);
    if (x.dtype() == DType::kFloat) *fill.data<float>() = v;
    else if (x.dtype() == DType::kDouble) *fill.data<double>() = v;
  }
  if (mode != "constant" && x.numel() == 0 && out.numel() > 0)
    return invalid_argument("{}: cannot {}-pad an empty axis", ctx.node().describe(), mode);
  std::vector<std::vector<int64_t>> tables(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < out.dims()[d]; ++i) tables[d].push_back(pad_source(i - p[d], x.dims()[d], mode));
  gather_by_tables(dtype_size(x.dtype()), out.dims(), tables, x.raw(), x.dims(), out.raw(), fill.raw());
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Expand", 8, 1000, expand);
ORT_REGISTER_CPU_KERNEL("Tile", 6, 1000, tile);
ORT_REGISTER_CPU_KERNEL("Pad", 2, 1000, pad);

}  // namespace ort_train
