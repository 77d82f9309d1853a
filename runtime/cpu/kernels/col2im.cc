// CPU kernels of Col2Im and com.ort_train Im2Col (float32/64), through the
// pixel map of graph/ops/col2im.h. Col2Im sums each channel's columns into
// its own image plane in a fixed order (one task per plane), so it repeats
// bit for bit on any thread count; Im2Col only reads.
#include <cstring>

#include "graph/dispatch.h"
#include "graph/ops/col2im.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {


Status col2im(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3) return shape_error("{}: the input must be [N, C * K, L]", ctx.node().describe());
  ASSIGN_OR_RETURN(Col2ImGeometry g,
                   col2im_geometry(ctx.node(), ctx.input(1).to_int64_vector(), ctx.input(2).to_int64_vector()));
  if (x.dim(1) % g.block_size != 0 || x.dim(2) != g.columns)
    return shape_error("{}: input {} does not hold blocks of {} values at {} positions", ctx.node().describe(),
                       dims_to_string(x.dims()), g.block_size, g.columns);
  const std::vector<int64_t> map = col2im_pixel_map(g);
  const int64_t planes = x.dim(0) * (x.dim(1) / g.block_size), column_values = g.block_size * g.columns;
  Tensor& y = ctx.output(0);
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* xs = x.data<T>();
    T* ys = y.data<T>();
    std::memset(ys, 0, y.nbytes());
    parallel_for(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* cols = xs + p * column_values;
        T* plane = ys + p * g.pixels;
        for (int64_t i = 0; i < column_values; ++i)
          if (map[static_cast<size_t>(i)] >= 0) plane[map[static_cast<size_t>(i)]] += cols[i];
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

// Im2Col(dY [N, C, image...], block_shape) -> [N, C * K, L]: each column
// element reads its pixel, or is zero in the padding.
Status im2col(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  if (dy.rank() < 3) return shape_error("{}: dY must be [N, C, spatial...]", ctx.node().describe());
  ASSIGN_OR_RETURN(Col2ImGeometry g, col2im_geometry(ctx.node(), Dims(dy.dims().begin() + 2, dy.dims().end()),
                                                     ctx.input(1).to_int64_vector()));
  const std::vector<int64_t> map = col2im_pixel_map(g);
  const int64_t planes = dy.dim(0) * dy.dim(1), column_values = g.block_size * g.columns;
  Tensor& dx = ctx.output(0);
  bool ok = dispatch_float(dy.dtype(), [&]<typename T>() {
    const T* dys = dy.data<T>();
    T* dxs = dx.data<T>();
    parallel_for(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* plane = dys + p * g.pixels;
        T* cols = dxs + p * column_values;
        for (int64_t i = 0; i < column_values; ++i) {
          const int64_t at = map[static_cast<size_t>(i)];
          cols[i] = at >= 0 ? plane[at] : T(0);
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dy.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Col2Im", 18, 1000, col2im);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "Im2Col", 1, 1000, DeviceKind::kCpu, im2col);

}  // namespace ort_train
