// CPU kernel of PadGrad(dY, shape) -> dX, attributes `pads` (begin for every
// dim, then end, as resolved from the forward) and `mode`: every output
// position's gradient is added to the input position Pad read it from (none
// for the constant border; several outputs share a source with reflect, edge
// and wrap). Sequential: Pad's gradient is a small part of any model.
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/pad_source.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status pad_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  Tensor& dX = ctx.output(0);
  std::vector<int64_t> pads = ctx.node().attr_ints("pads");
  std::string mode = ctx.node().attr_string("mode", "constant");
  int64_t rank = dX.rank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return shape_error("{}: {} pads for rank {}", ctx.node().describe(), pads.size(), rank);
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = dX.dims()[d];
    for (int64_t j = 0; j < dY.dims()[d]; ++j) {
      int64_t i = j - pads[d];
      bool inside = i >= 0 && i < n;
      src[d].push_back(inside ? i : (mode == "constant" || n == 0 ? -1 : pad_source(i, n, mode)));
    }
  }
  std::memset(dX.raw(), 0, dX.nbytes());
  if (dY.numel() == 0) return Status::Ok();
  std::vector<int64_t> xs = contiguous_strides(dX.dims());
  bool ok = dispatch_float(dY.dtype(), [&]<typename T>() {
    const T* dy = dY.data<T>();
    T* dx = dX.data<T>();
    std::vector<int64_t> o(static_cast<size_t>(rank), 0);
    for (int64_t p = 0; p < dY.numel(); ++p) {
      int64_t off = 0;
      bool inside = true;
      for (int64_t d = 0; d < rank && inside; ++d) {
        int64_t i = src[d][o[d]];
        inside = i >= 0;
        off += i * xs[d];
      }
      if (inside) dx[off] += dy[p];
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++o[d] < dY.dims()[d]) break;
        o[d] = 0;
      }
    }
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dY.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "PadGrad", 1, 1000, DeviceKind::kCpu, pad_grad);

}  // namespace ort_train
