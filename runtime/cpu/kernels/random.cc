// CPU kernels of RandomUniform, RandomNormal, their *Like forms and Bernoulli:
// element i is numerics/counter_random.h's draw i from the node's seed
// (runtime/dropout_seed.h), the CUDA kernels' own arithmetic, so a seed gives
// the same values on both devices, on any thread count.
#include "graph/dispatch.h"
#include "numerics/counter_random.h"
#include "runtime/cpu/parallel.h"
#include "runtime/dropout_seed.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

KernelFn draw(RandomDraw kind) {
  return [kind](KernelContext& ctx) -> Status {
    const bool uniform = kind == RandomDraw::kUniform;
    const double a = ctx.node().attr_float(uniform ? "low" : "mean", 0.f);
    const double b = ctx.node().attr_float(uniform ? "high" : "scale", 1.f);
    const uint64_t seed = dropout_seed(ctx);
    Tensor& out = ctx.output(0);
    bool ok = dispatch_float(out.dtype(), [&]<typename T>() {
      T* o = out.data<T>();
      parallel_for(out.numel(), kElementwiseGrain, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) o[i] = static_cast<T>(random_draw(kind, seed, static_cast<uint64_t>(i), a, b));
      });
    });
    return ok ? Status::Ok() : unsupported_dtype(ctx, out.dtype());
  };
}

Status bernoulli(KernelContext& ctx) {
  const Tensor& p = ctx.input(0);
  Tensor& out = ctx.output(0);
  const uint64_t seed = dropout_seed(ctx);
  std::vector<double> probs = p.to_double_vector();
  bool ok = dispatch_numeric(out.dtype(), [&]<typename T>() {
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i)
      o[i] = static_cast<T>(bernoulli_draw(seed, static_cast<uint64_t>(i), probs[static_cast<size_t>(i)]) ? 1 : 0);
  });
  if (!ok && out.dtype() == DType::kBool) {
    bool* o = out.data<bool>();
    for (int64_t i = 0; i < out.numel(); ++i)
      o[i] = bernoulli_draw(seed, static_cast<uint64_t>(i), probs[static_cast<size_t>(i)]);
    ok = true;
  }
  return ok ? Status::Ok() : unsupported_dtype(ctx, out.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("RandomUniform", 1, 1000, draw(RandomDraw::kUniform));
ORT_REGISTER_CPU_KERNEL("RandomNormal", 1, 1000, draw(RandomDraw::kNormal));
ORT_REGISTER_CPU_KERNEL("RandomUniformLike", 1, 1000, draw(RandomDraw::kUniform));
ORT_REGISTER_CPU_KERNEL("RandomNormalLike", 1, 1000, draw(RandomDraw::kNormal));
ORT_REGISTER_CPU_KERNEL("Bernoulli", 15, 1000, bernoulli);

}  // namespace ort_train
