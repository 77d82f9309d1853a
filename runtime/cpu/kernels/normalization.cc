// CPU kernels: LayerNormalization (one pass per row, statistics in double),
// its simplified form (RMSNorm: com.ort_train SimplifiedLayerNormalization, no
// mean subtracted, no bias, outputs Y and InvStdDev) and
// BatchNormalization (inference with running statistics; training mode with
// batch statistics and updated running statistics).
#include <cmath>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// `simplified`: RMSNorm, x * scale / sqrt(mean(x^2) + eps).
Status layer_norm_impl(KernelContext& ctx, bool simplified) {
  const Tensor& X = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  Tensor& Y = ctx.output(0);
  int64_t rank = X.rank();
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (axis < 0) axis += rank;
  double eps = ctx.node().attr_float("epsilon", 1e-5f);
  int64_t rows = 1, n = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= X.dims()[d];
  for (int64_t d = axis; d < rank; ++d) n *= X.dims()[d];
  const Tensor* bias = !simplified && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  // Scale and bias broadcast to the normalized shape; the usual case is exactly that shape.
  if (scale.numel() != n && scale.numel() != 1)
    return shape_error("{}: scale has {} elements, the normalized shape has {}", ctx.node().describe(), scale.numel(), n);
  if (bias && bias->numel() != n && bias->numel() != 1)
    return shape_error("{}: bias has {} elements, the normalized shape has {}", ctx.node().describe(), bias->numel(), n);
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* g = scale.data<T>();
    const T* b = bias ? bias->data<T>() : nullptr;
    T* y = Y.data<T>();
    bool g1 = scale.numel() == 1, b1 = bias && bias->numel() == 1;
    // Mean / InvStdDev outputs are in the stash type (float unless the input is double).
    // Allocated here, before the threads start: KernelContext::output allocates lazily
    // and is not safe to call from several threads at once.
    // Outputs: Y, Mean, InvStdDev; the simplified op has Y, InvStdDev.
    Tensor* stats[3] = {nullptr, nullptr, nullptr};
    for (size_t out = 1; out <= 2; ++out)
      if (ctx.num_outputs() > out && ctx.has_output(out)) stats[simplified ? 2 : out] = &ctx.output(out);
    auto write_stat = [&](size_t out, int64_t r, double v) {
      Tensor* t = stats[out];
      if (!t) return;
      if (t->dtype() == DType::kDouble) t->data<double>()[r] = v;
      else t->data<float>()[r] = static_cast<float>(v);
    };
    parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        double mean = 0;
        if (!simplified) {
          for (int64_t i = 0; i < n; ++i) mean += xr[i];
          mean /= static_cast<double>(n);
        }
        double var = 0;
        for (int64_t i = 0; i < n; ++i) {
          double d = xr[i] - mean;
          var += d * d;
        }
        var /= static_cast<double>(n);
        double inv = 1.0 / std::sqrt(var + eps);
        T m = static_cast<T>(mean), iv = static_cast<T>(inv);
        for (int64_t i = 0; i < n; ++i) {
          T v = (xr[i] - m) * iv * g[g1 ? 0 : i];
          yr[i] = b ? v + b[b1 ? 0 : i] : v;
        }
        write_stat(1, r, mean);
        write_stat(2, r, inv);
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

Status layer_norm(KernelContext& ctx) { return layer_norm_impl(ctx, false); }
Status rms_norm(KernelContext& ctx) { return layer_norm_impl(ctx, true); }

Status batch_norm(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  int64_t N = X.dims()[0], C = X.dims()[1];
  int64_t S = N * C == 0 ? 0 : X.numel() / (N * C);
  double eps = ctx.node().attr_float("epsilon", 1e-5f);
  double momentum = ctx.node().attr_float("momentum", 0.9f);
  // Training mode is the training_mode attribute (opset 14+). Older opsets run the
  // inference formula; their optional statistic outputs then echo the running values.
  bool training = ctx.opset() >= 14 && ctx.node().attr_int("training_mode", 0) != 0;
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* scale = ctx.input(1).data<T>();
    const T* bias = ctx.input(2).data<T>();
    const T* rmean = ctx.input(3).data<T>();
    const T* rvar = ctx.input(4).data<T>();
    T* y = Y.data<T>();
    std::vector<double> mean(static_cast<size_t>(C)), var(static_cast<size_t>(C));
    if (training) {
      parallel_for(C, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          // simd reductions: the sums in double over vector lanes, not one
          // dependent add per element (a fixed order: the same bits at any
          // thread count).
          double s = 0, ss = 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* p = x + (n * C + c) * S;
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < S; ++i) s += p[i];
          }
          double cnt = static_cast<double>(N * S);
          double m = s / cnt;
          for (int64_t n = 0; n < N; ++n) {
            const T* p = x + (n * C + c) * S;
#pragma omp simd reduction(+ : ss)
            for (int64_t i = 0; i < S; ++i) ss += (p[i] - m) * (p[i] - m);
          }
          mean[c] = m;
          var[c] = ss / cnt;  // biased batch variance, as the ONNX reference uses
        }
      });
      if (ctx.has_output(1)) {
        T* out_mean = ctx.output(1).data<T>();
        for (int64_t c = 0; c < C; ++c) out_mean[c] = static_cast<T>(rmean[c] * momentum + mean[c] * (1 - momentum));
      }
      if (ctx.has_output(2)) {
        T* out_var = ctx.output(2).data<T>();
        for (int64_t c = 0; c < C; ++c) out_var[c] = static_cast<T>(rvar[c] * momentum + var[c] * (1 - momentum));
      }
    } else {
      for (int64_t c = 0; c < C; ++c) {
        mean[c] = rmean[c];
        var[c] = rvar[c];
      }
      for (size_t o = 1; o < ctx.num_outputs(); ++o)
        if (ctx.has_output(o)) {
          T* p = ctx.output(o).data<T>();
          for (int64_t c = 0; c < C; ++c) p[c] = static_cast<T>(o % 2 == 1 ? mean[c] : var[c]);
        }
    }
    std::vector<T> mul(static_cast<size_t>(C)), add(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      mul[c] = static_cast<T>(scale[c] / std::sqrt(var[c] + eps));
      add[c] = static_cast<T>(bias[c] - mean[c] * mul[c]);
    }
    parallel_for(N * C, std::max<int64_t>(1, 8192 / std::max<int64_t>(S, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t c = t % C;
        const T a = mul[c], shift = add[c];
        const T* p = x + t * S;
        T* q = y + t * S;
        for (int64_t i = 0; i < S; ++i) q[i] = p[i] * a + shift;
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL_INPLACE("LayerNormalization", 17, 1000, layer_norm);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "LayerNormalization", 1, 1000, DeviceKind::kCpu, layer_norm);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "SimplifiedLayerNormalization", 1, 1000, DeviceKind::kCpu, rms_norm);
ORT_REGISTER_CPU_KERNEL("BatchNormalization", 7, 1000, batch_norm);

}  // namespace ort_train
