// CPU kernels of AffineGrid and com.ort_train AffineGridGrad (float32/64).
// Each grid point p has normalized coordinates c_p = (x, y[, z], 1), as
// PyTorch's affine_grid: with align_corners the corners' centres are -1 and
// 1 (a dim of 1 is -1), else the corners' edges are (a dim of 1 is 0).
//   grid[n, p, i] = sum_j theta[n, i, j] * c_p[j]
//   dTheta[n, i, j] = sum_p dGrid[n, p, i] * c_p[j]   (points in order)
#include <vector>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// The normalized coordinate of index i of a dim of n.
double grid_coordinate(int64_t i, int64_t n, bool align_corners) {
  if (align_corners) return n == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);
  return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
}

struct GridPoints {
  int64_t batch = 0, k = 0, count = 1;  // k spatial dims, count points
  std::vector<double> coords;           // count x (k + 1): x, y[, z], 1
};

Result<GridPoints> grid_points(const KernelContext& ctx, const Tensor& size) {
  if (size.dtype() != DType::kInt64 || (size.numel() != 4 && size.numel() != 5))
    return shape_error("{}: size must be 4 or 5 int64 values", ctx.node().describe());
  const Dims s = size.to_int64_vector();
  GridPoints g;
  g.batch = s[0];
  g.k = static_cast<int64_t>(s.size()) - 2;
  for (size_t i = 2; i < s.size(); ++i) g.count *= s[i];
  const bool align = ctx.node().attr_int("align_corners", 0) != 0;
  g.coords.reserve(static_cast<size_t>(g.count * (g.k + 1)));
  // Points row-major over (D,) H, W; coordinates listed x first.
  const int64_t d = g.k == 3 ? s[2] : 1, h = s[s.size() - 2], w = s[s.size() - 1];
  for (int64_t z = 0; z < d; ++z)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        g.coords.push_back(grid_coordinate(x, w, align));
        g.coords.push_back(grid_coordinate(y, h, align));
        if (g.k == 3) g.coords.push_back(grid_coordinate(z, d, align));
        g.coords.push_back(1.0);
      }
  return g;
}

Status affine_grid(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  ASSIGN_OR_RETURN(GridPoints g, grid_points(ctx, ctx.input(1)));
  if (theta.dims() != Dims{g.batch, g.k, g.k + 1})
    return shape_error("{}: theta is {}, the size needs [{}, {}, {}]", ctx.node().describe(),
                       dims_to_string(theta.dims()), g.batch, g.k, g.k + 1);
  const int64_t cols = g.k + 1;
  bool ok = dispatch_float(theta.dtype(), [&]<typename T>() {
    const T* th = theta.data<T>();
    T* out = ctx.output(0).data<T>();
    parallel_for(g.batch * g.count, 256, [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const int64_t n = q / g.count, p = q % g.count;
        const double* c = &g.coords[static_cast<size_t>(p * cols)];
        for (int64_t i = 0; i < g.k; ++i) {
          double v = 0;
          for (int64_t j = 0; j < cols; ++j) v += static_cast<double>(th[(n * g.k + i) * cols + j]) * c[j];
          out[q * g.k + i] = static_cast<T>(v);
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, theta.dtype());
}

Status affine_grid_grad(KernelContext& ctx) {
  const Tensor& dgrid = ctx.input(0);
  ASSIGN_OR_RETURN(GridPoints g, grid_points(ctx, ctx.input(1)));
  if (dgrid.numel() != g.batch * g.count * g.k)
    return shape_error("{}: dGrid has {} elements, the size makes {}", ctx.node().describe(), dgrid.numel(),
                       g.batch * g.count * g.k);
  const int64_t cols = g.k + 1;
  bool ok = dispatch_float(dgrid.dtype(), [&]<typename T>() {
    const T* dg = dgrid.data<T>();
    T* dt = ctx.output(0).data<T>();
    parallel_for(g.batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        std::vector<double> acc(static_cast<size_t>(g.k * cols), 0.0);
        for (int64_t p = 0; p < g.count; ++p) {
          const double* c = &g.coords[static_cast<size_t>(p * cols)];
          for (int64_t i = 0; i < g.k; ++i) {
            const double v = static_cast<double>(dg[(n * g.count + p) * g.k + i]);
            for (int64_t j = 0; j < cols; ++j) acc[static_cast<size_t>(i * cols + j)] += v * c[j];
          }
        }
        for (int64_t e = 0; e < g.k * cols; ++e) dt[n * g.k * cols + e] = static_cast<T>(acc[static_cast<size_t>(e)]);
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, dgrid.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("AffineGrid", 20, 1000, affine_grid);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "AffineGridGrad", 1, 1000, DeviceKind::kCpu, affine_grid_grad);

}  // namespace ort_train
