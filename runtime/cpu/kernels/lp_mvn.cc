// CPU kernels of LpNormalization and MeanVarianceNormalization and of their
// gradients: rows from graph/ops/lp_mvn.h in parallel, sums in double,
// element arithmetic from numerics/lp_mvn.h (the CUDA kernels' too).
#include <cmath>

#include "graph/dispatch.h"
#include "graph/ops/lp_mvn.h"
#include "numerics/lp_mvn.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// Per row: LpNormalization's norm, or MVN's mean and standard deviation.
template <typename T>
void row_stats(const T* x, const NormalizedRows& r, int64_t base, bool mvn, double& a, double& b) {
  double s = 0, q = 0;
  for (int64_t o : r.row) {
    const double v = static_cast<double>(x[base + o]);
    s += mvn ? v : (r.p == 1 ? std::abs(v) : v * v);
    q += v * v;
  }
  const double n = static_cast<double>(r.row.size());
  if (!mvn) {
    a = r.p == 1 ? s : std::sqrt(s);
    return;
  }
  a = s / n;
  b = std::sqrt(std::max(q / n - a * a, 0.0));
}

KernelFn normalize(bool mvn) {
  return [mvn](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(NormalizedRows r, normalized_rows(ctx.node(), x.dims(), mvn));
    bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
      const T* px = x.data<T>();
      T* y = ctx.output(0).data<T>();
      parallel_for(static_cast<int64_t>(r.base.size()), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t k = b0; k < b1; ++k) {
          const int64_t base = r.base[static_cast<size_t>(k)];
          double a = 0, s = 0;
          row_stats(px, r, base, mvn, a, s);
          for (int64_t o : r.row) {
            const double v = static_cast<double>(px[base + o]);
            y[base + o] = static_cast<T>(mvn ? (v - a) / (s + kMvnEpsilon) : v / a);
          }
        }
      });
    });
    return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
  };
}

KernelFn normalize_grad(bool mvn) {
  return [mvn](KernelContext& ctx) -> Status {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (dy.dims() != x.dims()) return shape_error("{}: dY and X differ in shape", ctx.node().describe());
    ASSIGN_OR_RETURN(NormalizedRows r, normalized_rows(ctx.node(), x.dims(), mvn));
    bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
      const T* px = x.data<T>();
      const T* pg = dy.data<T>();
      T* dx = ctx.output(0).data<T>();
      const double n = static_cast<double>(r.row.size());
      parallel_for(static_cast<int64_t>(r.base.size()), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t k = b0; k < b1; ++k) {
          const int64_t base = r.base[static_cast<size_t>(k)];
          double a = 0, s = 0;
          row_stats(px, r, base, mvn, a, s);
          double s1 = 0, s2 = 0;
          for (int64_t o : r.row) {
            const double g = static_cast<double>(pg[base + o]), v = static_cast<double>(px[base + o]);
            s1 += g;
            s2 += mvn ? g * (v - a) : g * v / a;
          }
          for (int64_t o : r.row) {
            const double g = static_cast<double>(pg[base + o]), v = static_cast<double>(px[base + o]);
            dx[base + o] = static_cast<T>(mvn ? mvn_dx(g, v, a, s, s1 / n, s2 / n) : lp_norm_dx(g, v, a, s2, r.p));
          }
        }
      });
    });
    return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
  };
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("LpNormalization", 1, 1000, normalize(false));
ORT_REGISTER_CPU_KERNEL("MeanVarianceNormalization", 9, 1000, normalize(true));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "LpNormalizationGrad", 1, 1000, DeviceKind::kCpu, normalize_grad(false));
ORT_REGISTER_KERNEL(kOrtTrainDomain, "MeanVarianceNormalizationGrad", 1, 1000, DeviceKind::kCpu, normalize_grad(true));

}  // namespace ort_train
