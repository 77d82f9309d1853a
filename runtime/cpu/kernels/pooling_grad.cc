// CPU kernels of the pooling gradients, one (image, channel) plane per task.
//   MaxPoolGrad(dY, Indices, shape)  dX.flat[Indices[i]] += dY[i] (the forward's
//                                    row-major argmax indices, ties to the first)
//   AveragePoolGrad(dY, shape)       each window's dY / divisor added to the input
//                                    positions it averaged, with the forward's
//                                    attributes (count_include_pad, ceil_mode, pads)
#include <cstring>

#include <algorithm>

#include "graph/dispatch.h"
#include "graph/ops/window_geometry.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/pool_window.h"
#include "runtime/index_fault_error.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status max_pool_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  Tensor& dX = ctx.output(0);
  std::memset(dX.raw(), 0, dX.nbytes());
  int64_t planes = dX.dims()[0] * dX.dims()[1];
  int64_t out_plane = planes ? dY.numel() / planes : 0;
  int64_t in_plane = planes ? dX.numel() / planes : 0;
  const int64_t* ix = idx.data<int64_t>();
  // The indices come from the graph (a file can hold any): each must fall in its own plane of X.
  if (idx.numel() != dY.numel() || out_plane * planes != dY.numel())
    return shape_error("{}: dY ({} elements) and Indices ({}) do not split into {} planes of X",
                       ctx.node().describe(), dY.numel(), idx.numel(), planes);
  for (int64_t i = 0; i < idx.numel(); ++i) {
    int64_t first = (i / std::max<int64_t>(out_plane, 1)) * in_plane;
    if (ix[i] < first || ix[i] >= first + in_plane)
      return plane_index_error(ctx.node().describe(), ix[i], i, first, first + in_plane);
  }
  bool ok = dispatch_float(dY.dtype(), [&]<typename T>() {
    const T* dy = dY.data<T>();
    T* dx = dX.data<T>();
    // Indices of plane p fall inside plane p of X, so planes never collide.
    parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b * out_plane; i < e * out_plane; ++i) dx[ix[i]] += dy[i];
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dY.dtype());
}

Status average_pool_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  Tensor& dX = ctx.output(0);
  std::vector<int64_t> spatial(dX.dims().begin() + 2, dX.dims().end());
  ASSIGN_OR_RETURN(auto geo, window_geometry(ctx.node(), spatial, ctx.node().attr_ints("kernel_shape"), true));
  bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  int64_t planes = dX.dims()[0] * dX.dims()[1], in_size = 1, out_size = 1;
  for (const WindowDim& w : geo) {
    in_size *= w.in;
    out_size *= w.out;
  }
  if (dY.numel() != planes * out_size)
    return shape_error("{}: dY has {} elements, the pooled output of X {}", ctx.node().describe(), dY.numel(),
                       planes * out_size);
  std::memset(dX.raw(), 0, dX.nbytes());
  bool ok = dispatch_float(dY.dtype(), [&]<typename T>() {
    const T* dy = dY.data<T>();
    T* dx = dX.data<T>();
    parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      std::vector<int64_t> o(geo.size()), offsets;
      for (int64_t pl = b; pl < e; ++pl) {
        std::fill(o.begin(), o.end(), 0);
        for (int64_t p = 0; p < out_size; ++p, next_window(geo, o)) {
          offsets.clear();
          int64_t padded_count = 0;
          for_each_window_element(geo, o, [&](const std::vector<int64_t>&, int64_t off, bool inside, bool in_padded) {
            padded_count += in_padded;
            if (inside) offsets.push_back(off);
          });
          int64_t div = include_pad ? padded_count : static_cast<int64_t>(offsets.size());
          if (div == 0) continue;
          T share = dy[pl * out_size + p] / static_cast<T>(div);
          for (int64_t off : offsets) dx[pl * in_size + off] += share;
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dY.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "MaxPoolGrad", 1, 1000, DeviceKind::kCpu, max_pool_grad);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "AveragePoolGrad", 1, 1000, DeviceKind::kCpu, average_pool_grad);

}  // namespace ort_train
