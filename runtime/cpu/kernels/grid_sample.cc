// CPU kernels of GridSample and com.ort_train GridSampleGrad (4-D, float32/64):
// each grid point's taps from numerics/grid_sample.h (the CUDA kernels'
// arithmetic too). The forward runs one image's points per task; the
// gradient walks each image's points in order, so dX sums in a fixed order
// and repeats bit for bit on any thread count.
#include <cstring>

#include "graph/dispatch.h"
#include "graph/ops/grid_sample.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status grid_sample(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &grid = ctx.input(1);
  ASSIGN_OR_RETURN(GridSampleParams p, grid_sample_params(ctx.node(), x.dims(), grid.dims()));
  if (grid.dtype() != x.dtype()) return unsupported_dtype(ctx, grid.dtype());
  Tensor& y = ctx.output(0);
  const int64_t n = x.dims()[0], c = x.dims()[1], points = grid.dims()[1] * grid.dims()[2];
  const int64_t plane = p.height * p.width;
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* xs = x.data<T>();
    const T* gs = grid.data<T>();
    T* ys = y.data<T>();
    parallel_for(n * points, 64, [&](int64_t begin, int64_t end) {
      GridTaps<T> taps;
      for (int64_t q = begin; q < end; ++q) {
        const int64_t b = q / points, pt = q % points;
        grid_sample_taps(gs[2 * q], gs[2 * q + 1], p, &taps);
        grid_sample_point(taps, p, xs + b * c * plane, c, ys + b * c * points + pt, points);
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

// GridSampleGrad(dY, X, Grid) -> dX, dGrid.
Status grid_sample_grad(KernelContext& ctx) {
  const Tensor &dy = ctx.input(0), &x = ctx.input(1), &grid = ctx.input(2);
  ASSIGN_OR_RETURN(GridSampleParams p, grid_sample_params(ctx.node(), x.dims(), grid.dims()));
  const int64_t n = x.dims()[0], c = x.dims()[1], points = grid.dims()[1] * grid.dims()[2];
  if (dy.numel() != n * c * points)
    return shape_error("{}: dY has {} elements, expected {}", ctx.node().describe(), dy.numel(), n * c * points);
  const int64_t plane = p.height * p.width;
  Tensor* dx = ctx.has_output(0) ? &ctx.output(0) : nullptr;
  Tensor* dgrid = ctx.has_output(1) ? &ctx.output(1) : nullptr;
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* xs = x.data<T>();
    const T* gs = grid.data<T>();
    const T* dys = dy.data<T>();
    T* dxs = dx ? dx->data<T>() : nullptr;
    T* dgs = dgrid ? dgrid->data<T>() : nullptr;
    if (dxs) std::memset(dxs, 0, static_cast<size_t>(dx->nbytes()));
    parallel_for(n, 1, [&](int64_t begin, int64_t end) {  // images apart: no two tasks touch one dX plane
      GridTaps<T> taps;
      for (int64_t b = begin; b < end; ++b) {
        T* dx_image = dxs ? dxs + b * c * plane : nullptr;
        auto add_dx = [&](int64_t at, T v) {
          if (dx_image) dx_image[at] += v;
        };
        for (int64_t pt = 0; pt < points; ++pt) {
          const int64_t q = b * points + pt;
          grid_sample_taps(gs[2 * q], gs[2 * q + 1], p, &taps);
          T ggx, ggy;
          grid_sample_point_grad(taps, p, dys + b * c * points + pt, points, xs + b * c * plane, c, add_dx, &ggx,
                                 &ggy);
          if (dgs) {
            dgs[2 * q] = ggx;
            dgs[2 * q + 1] = ggy;
          }
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("GridSample", 16, 1000, grid_sample);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "GridSampleGrad", 1, 1000, DeviceKind::kCpu, grid_sample_grad);

}  // namespace ort_train
