// CPU kernels of InstanceNormalization, GroupNormalization and GroupNormGrad:
// rows (n, group) in parallel, statistics accumulated in double, element
// arithmetic from numerics/group_norm.h (the CUDA kernels' too).
#include <vector>

#include "graph/dispatch.h"
#include "graph/ops/group_norm.h"
#include "numerics/group_norm.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <typename T>
void row_stats(const T* x, int64_t m, double eps, double& mean, double& rstd) {
  double s = 0;
  for (int64_t i = 0; i < m; ++i) s += static_cast<double>(x[i]);
  mean = m ? s / static_cast<double>(m) : 0.0;
  double q = 0;
  for (int64_t i = 0; i < m; ++i) q += (static_cast<double>(x[i]) - mean) * (static_cast<double>(x[i]) - mean);
  rstd = group_norm_rstd(m ? q / static_cast<double>(m) : 0.0, eps);
}

// Which scale/bias entry element i of row (n, g) uses.
int64_t affine_of(const GroupNormGeometry& g, int64_t group, int64_t i) {
  return g.affine_per_group ? group : group * g.channels_per_group() + i / g.spatial;
}

Status group_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(GroupNormGeometry g, group_norm_geometry(ctx.node(), ctx.opset(), x.dims()));
  if (ctx.input(1).numel() != g.affine_size() || ctx.input(2).numel() != g.affine_size())
    return shape_error("{}: scale and bias need {} entries", ctx.node().describe(), g.affine_size());
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* px = x.data<T>();
    const T* s = ctx.input(1).data<T>();
    const T* b = ctx.input(2).data<T>();
    T* y = ctx.output(0).data<T>();
    const int64_t m = g.row_size();
    parallel_for(g.batch * g.groups, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        double mean, rstd;
        row_stats(px + row * m, m, g.epsilon, mean, rstd);
        const int64_t group = row % g.groups;
        for (int64_t i = 0; i < m; ++i) {
          const int64_t a = affine_of(g, group, i);
          y[row * m + i] = group_norm_value(px[row * m + i], mean, rstd, s[a], b[a]);
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

// GroupNormGrad(dY, X, scale) -> (dX, dscale, dbias).
Status group_norm_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  ASSIGN_OR_RETURN(GroupNormGeometry g, group_norm_geometry(ctx.node(), ctx.opset(), x.dims()));
  if (ctx.input(2).numel() != g.affine_size() || dy.dims() != x.dims())
    return shape_error("{}: dY, X and scale do not fit", ctx.node().describe());
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* pdy = dy.data<T>();
    const T* px = x.data<T>();
    const T* s = ctx.input(2).data<T>();
    const int64_t m = g.row_size(), rows = g.batch * g.groups, A = g.affine_size();
    // Per row: its affine parameters' partial sums, so rows run in parallel and add up in a fixed order.
    std::vector<double> dscale_rows(static_cast<size_t>(rows * A), 0.0), dbias_rows(dscale_rows.size(), 0.0);
    T* dx = ctx.has_output(0) ? ctx.output(0).data<T>() : nullptr;
    parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        double mean, rstd;
        row_stats(px + row * m, m, g.epsilon, mean, rstd);
        const int64_t group = row % g.groups;
        double sum1 = 0, sum2 = 0;
        for (int64_t i = 0; i < m; ++i) {
          const int64_t a = affine_of(g, group, i);
          const double xhat = (static_cast<double>(px[row * m + i]) - mean) * rstd;
          const double d = static_cast<double>(pdy[row * m + i]);
          const double dxhat = d * static_cast<double>(s[a]);
          sum1 += dxhat;
          sum2 += dxhat * xhat;
          dscale_rows[row * A + a] += d * xhat;
          dbias_rows[row * A + a] += d;
        }
        if (!dx) continue;
        for (int64_t i = 0; i < m; ++i) {
          const int64_t a = affine_of(g, group, i);
          const double xhat = (static_cast<double>(px[row * m + i]) - mean) * rstd;
          const double dxhat = static_cast<double>(pdy[row * m + i]) * static_cast<double>(s[a]);
          dx[row * m + i] = static_cast<T>(group_norm_dx(dxhat, xhat, rstd, sum1 / m, sum2 / m));
        }
      }
    });
    for (size_t o = 1; o <= 2; ++o) {
      if (!ctx.has_output(o)) continue;
      const std::vector<double>& src = o == 1 ? dscale_rows : dbias_rows;
      T* out = ctx.output(o).data<T>();
      for (int64_t a = 0; a < A; ++a) {
        double v = 0;
        for (int64_t row = 0; row < rows; ++row) v += src[row * A + a];
        out[a] = static_cast<T>(v);
      }
    }
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("InstanceNormalization", 6, 1000, group_norm);
ORT_REGISTER_CPU_KERNEL("GroupNormalization", 18, 1000, group_norm);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "GroupNormGrad", 1, 1000, DeviceKind::kCpu, group_norm_grad);

}  // namespace ort_train
