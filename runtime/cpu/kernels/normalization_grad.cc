// CPU kernels of the normalization gradients. With x̂ the normalized input and
// g = dY * scale:
//   LayerNormalizationGrad(dY, X, Scale, Mean, InvStdDev) -> dX, dScale, dBias
//     per row: dX = inv * (g - mean(g) - x̂ * mean(g * x̂)); dScale = Σ_rows dY x̂; dBias = Σ_rows dY
//   SimplifiedLayerNormalizationGrad(dY, X, Scale, InvStdDev) -> dX, dScale   (RMSNorm: x̂ = x * inv)
//     per row: dX = inv * (g - x̂ * mean(g * x̂)); dScale = Σ_rows dY x̂
//   BatchNormalizationGrad(dY, X, Scale, Mean, Var) -> dX, dScale, dBias   (attrs epsilon, training_mode)
//     training_mode=1: batch statistics of X (Mean/Var inputs unused), per channel over N and spatial:
//       dX = inv * (g - mean(g) - x̂ * mean(g * x̂))
//     training_mode=0: running statistics are constants: dX = g * inv
//     dScale = Σ dY x̂; dBias = Σ dY
// Statistics and sums are accumulated in double.
#include <cmath>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

double stat(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kDouble ? t.data<double>()[i] : static_cast<double>(t.data<float>()[i]);
}

// `simplified`: RMSNorm's, whose statistics are only InvStdDev (the mean is 0).
Status layer_norm_grad_impl(KernelContext& ctx, bool simplified) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  const Tensor* mean_t = simplified ? nullptr : &ctx.input(3);
  const Tensor& inv_t = ctx.input(simplified ? 3 : 4);
  auto mean_of = [&](int64_t r) { return mean_t ? stat(*mean_t, r) : 0.0; };
  int64_t rank = X.rank();
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (axis < 0) axis += rank;
  int64_t rows = 1, n = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= X.dims()[d];
  for (int64_t d = axis; d < rank; ++d) n *= X.dims()[d];
  bool g1 = scale.numel() == 1;
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* dy = dY.data<T>();
    const T* s = scale.data<T>();
    T* dx = ctx.output(0).data<T>();
    parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        double m = mean_of(r), inv = stat(inv_t, r);
        const T* xr = x + r * n;
        const T* gr = dy + r * n;
        double sg = 0, sgx = 0;
        for (int64_t i = 0; i < n; ++i) {
          double g = static_cast<double>(gr[i]) * static_cast<double>(s[g1 ? 0 : i]);
          sg += g;
          sgx += g * (static_cast<double>(xr[i]) - m) * inv;
        }
        sg = simplified ? 0.0 : sg / static_cast<double>(n);
        sgx /= static_cast<double>(n);
        for (int64_t i = 0; i < n; ++i) {
          double g = static_cast<double>(gr[i]) * static_cast<double>(s[g1 ? 0 : i]);
          double xh = (static_cast<double>(xr[i]) - m) * inv;
          dx[r * n + i] = static_cast<T>(inv * (g - sg - xh * sgx));
        }
      }
    });
    // Parameter gradients: columns in parallel, rows summed in order (deterministic).
    bool want_scale = ctx.has_output(1), want_bias = ctx.num_outputs() > 2 && ctx.has_output(2);
    if (!want_scale && !want_bias) return;
    std::vector<double> ds(static_cast<size_t>(n), 0.0), db(static_cast<size_t>(n), 0.0);
    parallel_for(n, 64, [&](int64_t b, int64_t e) {
      for (int64_t r = 0; r < rows; ++r) {
        double m = mean_of(r), inv = stat(inv_t, r);
        for (int64_t i = b; i < e; ++i) {
          double g = static_cast<double>(dy[r * n + i]);
          ds[static_cast<size_t>(i)] += g * (static_cast<double>(x[r * n + i]) - m) * inv;
          db[static_cast<size_t>(i)] += g;
        }
      }
    });
    auto write = [&](size_t out, const std::vector<double>& v) {
      Tensor& t = ctx.output(out);
      T* p = t.data<T>();
      if (t.numel() == 1) {
        double sum = 0;
        for (double a : v) sum += a;
        p[0] = static_cast<T>(sum);
      } else {
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(v[static_cast<size_t>(i)]);
      }
    };
    if (want_scale) write(1, ds);
    if (want_bias) write(2, db);
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

Status layer_norm_grad(KernelContext& ctx) { return layer_norm_grad_impl(ctx, false); }
Status rms_norm_grad(KernelContext& ctx) { return layer_norm_grad_impl(ctx, true); }

Status batch_norm_grad(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  bool training = ctx.node().attr_int("training_mode", 0) != 0;
  double eps = ctx.node().attr_float("epsilon", 1e-5f);
  int64_t N = X.dims()[0], C = X.dims()[1];
  int64_t S = N * C == 0 ? 0 : X.numel() / (N * C);
  double cnt = static_cast<double>(N * S);
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* dy = dY.data<T>();
    const T* sc = scale.data<T>();
    T* dx = ctx.output(0).data<T>();
    T* ds = ctx.has_output(1) ? ctx.output(1).data<T>() : nullptr;
    T* db = ctx.num_outputs() > 2 && ctx.has_output(2) ? ctx.output(2).data<T>() : nullptr;
    parallel_for(C, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        // simd reductions: the sums in double over vector lanes, not one
        // dependent add per element (a fixed order: the same bits at any
        // thread count).
        double m, var;
        if (training) {
          double s = 0, ss = 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* p = x + (n * C + c) * S;
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < S; ++i) s += p[i];
          }
          m = s / cnt;
          for (int64_t n = 0; n < N; ++n) {
            const T* p = x + (n * C + c) * S;
#pragma omp simd reduction(+ : ss)
            for (int64_t i = 0; i < S; ++i) {
              double d = p[i] - m;
              ss += d * d;
            }
          }
          var = ss / cnt;
        } else {
          m = stat(ctx.input(3), c);
          var = stat(ctx.input(4), c);
        }
        double inv = 1.0 / std::sqrt(var + eps);
        double sg = 0, sgx = 0;  // Σ dY and Σ dY x̂
        for (int64_t n = 0; n < N; ++n) {
          const T* p = x + (n * C + c) * S;
          const T* g = dy + (n * C + c) * S;
#pragma omp simd reduction(+ : sg, sgx)
          for (int64_t i = 0; i < S; ++i) {
            sg += g[i];
            sgx += g[i] * (p[i] - m) * inv;
          }
        }
        // dX = a dY - (training) a (Σ dY + x̂ Σ dY x̂) / count, with the
        // per-channel factors out of the loop.
        const double a = static_cast<double>(sc[c]) * inv;
        const double k0 = a * sg / cnt, kx = a * inv * sgx / cnt;
        for (int64_t n = 0; n < N; ++n) {
          const T* p = x + (n * C + c) * S;
          const T* g = dy + (n * C + c) * S;
          T* q = dx + (n * C + c) * S;
          if (training) {
#pragma omp simd
            for (int64_t i = 0; i < S; ++i) q[i] = static_cast<T>(a * static_cast<double>(g[i]) - k0 - (p[i] - m) * kx);
          } else {
#pragma omp simd
            for (int64_t i = 0; i < S; ++i) q[i] = static_cast<T>(a * static_cast<double>(g[i]));
          }
        }
        if (ds) ds[c] = static_cast<T>(sgx);
        if (db) db[c] = static_cast<T>(sg);
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "LayerNormalizationGrad", 1, 1000, DeviceKind::kCpu, layer_norm_grad);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "SimplifiedLayerNormalizationGrad", 1, 1000, DeviceKind::kCpu, rms_norm_grad);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "BatchNormalizationGrad", 1, 1000, DeviceKind::kCpu, batch_norm_grad);

}  // namespace ort_train
