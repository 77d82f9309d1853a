// CPU kernel: Dropout. Inference is the identity with an all-true mask. Training
// mode (opset 12+: the training_mode input is true; before 12 ONNX leaves it to
// the runtime, so a training run) drops each element with probability `ratio`
// and scales the kept ones by 1/(1-ratio). The keep decision is a counter-based
// hash of (seed, element index): reproducible for a seed and independent of the
// thread count.
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "cuda_kernels/counter_random.h"
#include "runtime/dropout_seed.h"
#include "runtime/kernel.h"

namespace ort_train {

uint64_t dropout_seed(const KernelContext& ctx) {
  if (!ctx.node().attr("seed")) return ctx.random_seed();
  uint64_t attr_seed = static_cast<uint64_t>(ctx.node().attr_int("seed", 0));
  return mix64(attr_seed ^ (ctx.options().step * 0x9E3779B97F4A7C15ull));
}

namespace {

// The first element of an optional scalar input, or `fallback` when it is absent or empty.
double optional_scalar(const KernelContext& ctx, size_t i, double fallback) {
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return fallback;
  return ctx.input(i).to_double_vector()[0];
}

Status dropout(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  double ratio = ctx.opset() >= 12 ? optional_scalar(ctx, 1, 0.5) : ctx.node().attr_float("ratio", 0.5f);
  bool training = ctx.opset() >= 12 ? optional_scalar(ctx, 2, 0.0) != 0.0 : ctx.options().training;
  bool with_mask = ctx.has_output(1);
  if (!training || ratio == 0.0) {
    ctx.alias_output(0, x);
    if (with_mask) {
      Tensor& m = ctx.output(1);
      std::memset(m.raw(), 1, m.nbytes());
    }
    return Status::Ok();
  }
  if (!(ratio > 0.0 && ratio < 1.0))
    return invalid_argument("{}: ratio must be in [0, 1), got {}", ctx.node().describe(), ratio);
  uint64_t seed = dropout_seed(ctx);
  float drop_below = static_cast<float>(ratio);
  Tensor& out = ctx.output(0);
  bool* mask = with_mask ? ctx.output(1).data<bool>() : nullptr;
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    T* o = out.data<T>();
    T scale = static_cast<T>(1.0 / (1.0 - ratio));
    parallel_for(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        bool keep = counter_uniform(seed, static_cast<uint64_t>(i)) >= drop_below;
        o[i] = keep ? p[i] * scale : T(0);
        if (mask) mask[i] = keep;
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

// Element i is read before output element i is written, so the output may take over the input.
ORT_REGISTER_CPU_KERNEL_INPLACE("Dropout", 7, 1000, dropout);

}  // namespace ort_train
