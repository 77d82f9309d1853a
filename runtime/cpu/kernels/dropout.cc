// CPU kernels: Dropout, and com.ort_train DropoutAdd (Dropout(X) + R in one
// pass, dropout_add_fusion's). Inference is the identity with an all-true mask. Training
// mode (opset 12+: the training_mode input is true; before 12 ONNX leaves it to
// the runtime, so a training run) drops each element with probability `ratio`
// and scales the kept ones by 1/(1-ratio). The keep decision is a counter-based
// hash of (seed, element index): reproducible for a seed and independent of the
// thread count.
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/parallel.h"
#include "numerics/counter_random.h"
#include "runtime/dropout_seed.h"
#include "runtime/kernel.h"

namespace ort_train {

namespace {

// The first element of an optional scalar input, or `fallback` when it is absent or empty.
double optional_scalar(const KernelContext& ctx, size_t i, double fallback) {
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return fallback;
  return ctx.input(i).to_double_vector()[0];
}

// Writes Dropout(X) (plus R when `residual`, of X's shape, in the same pass)
// into `out`, and the keep decisions into `mask` when given.
Status dropout_into(const KernelContext& ctx, double ratio, bool training, const Tensor* residual, Tensor& out,
                    bool* mask) {
  const Tensor& x = ctx.input(0);
  bool dropping = training && ratio != 0.0;
  if (dropping && !(ratio > 0.0 && ratio < 1.0))
    return invalid_argument("{}: ratio must be in [0, 1), got {}", ctx.node().describe(), ratio);
  if (mask && !dropping) std::memset(mask, 1, static_cast<size_t>(x.numel()));
  uint64_t seed = dropping ? dropout_seed(ctx) : 0;
  float drop_below = static_cast<float>(ratio);
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    const T* r = residual ? residual->data<T>() : nullptr;
    T* o = out.data<T>();
    T scale = static_cast<T>(1.0 / (1.0 - ratio));
    parallel_for(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T v = p[i];
        if (dropping) {
          bool keep = counter_uniform(seed, static_cast<uint64_t>(i)) >= drop_below;
          v = keep ? v * scale : T(0);
          if (mask) mask[i] = keep;
        }
        o[i] = r ? v + r[i] : v;
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

Status dropout(KernelContext& ctx) {
  double ratio = ctx.opset() >= 12 ? optional_scalar(ctx, 1, 0.5) : ctx.node().attr_float("ratio", 0.5f);
  bool training = ctx.opset() >= 12 ? optional_scalar(ctx, 2, 0.0) != 0.0 : ctx.options().training;
  bool* mask = ctx.has_output(1) ? ctx.output(1).data<bool>() : nullptr;
  if (!training || ratio == 0.0) {
    ctx.alias_output(0, ctx.input(0));
    if (mask) std::memset(mask, 1, static_cast<size_t>(ctx.output(1).numel()));
    return Status::Ok();
  }
  return dropout_into(ctx, ratio, training, nullptr, ctx.output(0), mask);
}

// dropout_add_fusion's DropoutAdd(X, R[, ratio, training_mode]): ratio and
// training as an opset-12 Dropout reads them, or, with runtime_training=1
// (fused from a Dropout before opset 12), from the attribute and the run.
// When R is not of X's shape (broadcasting, which residuals never need), the
// dropped X is made first and R added over the broadcast as Add would.
Status dropout_add(KernelContext& ctx) {
  bool runtime_training = ctx.node().attr_int("runtime_training", 0) != 0;
  double ratio = runtime_training ? ctx.node().attr_float("ratio", 0.5f) : optional_scalar(ctx, 2, 0.5);
  bool training = runtime_training ? ctx.options().training : optional_scalar(ctx, 3, 0.0) != 0.0;
  const Tensor& x = ctx.input(0);
  const Tensor& r = ctx.input(1);
  if (r.dtype() != x.dtype()) return unsupported_dtype(ctx, r.dtype());
  Tensor& out = ctx.output(0);
  bool* mask = ctx.has_output(1) ? ctx.output(1).data<bool>() : nullptr;
  if (r.dims() == x.dims()) return dropout_into(ctx, ratio, training, &r, out, mask);
  Tensor dropped = ctx.allocate(x.dtype(), x.dims());
  RETURN_IF_ERROR(dropout_into(ctx, ratio, training, nullptr, dropped, mask));
  auto plan = make_broadcast_plan<2>(out.dims(), {&dropped.dims(), &r.dims()});
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* a = dropped.data<T>();
    const T* b = r.data<T>();
    T* o = out.data<T>();
    for_each_broadcast_run(plan, [&](int64_t at, const std::array<int64_t, 2>& off, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        o[at + i] = a[off[0] + i * plan.inner_step[0]] + b[off[1] + i * plan.inner_step[1]];
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

// Element i is read before output element i is written, so the output may take over the input.
ORT_REGISTER_CPU_KERNEL_INPLACE("Dropout", 7, 1000, dropout);
ORT_REGISTER_KERNEL_INPLACE(kOrtTrainDomain, "DropoutAdd", 1, 1000, DeviceKind::kCpu, dropout_add);

}  // namespace ort_train
