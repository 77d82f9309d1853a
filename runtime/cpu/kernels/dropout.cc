// CPU kernel: Dropout. Inference (the default, and always before opset 12) is the
// identity with an all-true mask. Training mode (opset 12+, training_mode input
// true) drops each element with probability `ratio` and scales the kept ones by
// 1/(1-ratio). The keep decision is a counter-based hash of (seed, element
// index): reproducible for a seed and independent of the thread count.
#include <cstring>

#include "graph/dispatch.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {

// Uniform in [0, 1) from (seed, counter): splitmix64 finalizer, top 24 bits.
inline float counter_uniform(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

namespace {

Status dropout(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  float ratio = ctx.opset() >= 12 ? (ctx.has_input(1) ? static_cast<float>(ctx.input(1).to_double_vector().at(0)) : 0.5f)
                                  : ctx.node().attr_float("ratio", 0.5f);
  bool training = ctx.opset() >= 12 && ctx.has_input(2) && ctx.input(2).to_int64_vector().at(0) != 0;
  if (ratio < 0.f || ratio >= 1.f)
    return invalid_argument("{}: ratio must be in [0, 1), got {}", ctx.node().describe(), ratio);
  bool with_mask = ctx.has_output(1);
  if (!training || ratio == 0.f) {
    ctx.alias_output(0, x);
    if (with_mask) {
      Tensor& m = ctx.output(1);
      std::memset(m.raw(), 1, m.nbytes());
    }
    return Status::Ok();
  }
  uint64_t seed = ctx.node().attr("seed") ? static_cast<uint64_t>(ctx.node().attr_int("seed", 0)) : ctx.random_seed();
  Tensor& out = ctx.output(0);
  bool* mask = with_mask ? ctx.output(1).data<bool>() : nullptr;
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* p = x.data<T>();
    T* o = out.data<T>();
    T scale = static_cast<T>(1.0 / (1.0 - ratio));
    parallel_for(x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        bool keep = counter_uniform(seed, static_cast<uint64_t>(i)) >= ratio;
        o[i] = keep ? p[i] * scale : T(0);
        if (mask) mask[i] = keep;
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Dropout", 7, 1000, dropout);

}  // namespace ort_train
