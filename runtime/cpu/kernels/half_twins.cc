// CPU kernels in bfloat16 and float16 for the ops the half_activations pass
// keeps in 16 bits (graph/passes/half_activations.cc): GELU, SiLU, ReLU,
// Tanh, Sigmoid, Neg, the arithmetic Add/Sub/Mul/Div/Sum, Dropout and the
// gradients of these. Each (but a Sum of three or more) is the float32 kernel run on widened copies of the
// 16-bit inputs, its 16-bit outputs rounded once at the end: the arithmetic
// PyTorch's bfloat16 elementwise kernels do (load, compute in float, round),
// and the one the CUDA 16-bit kernels do per element (cuda_kernels/
// elementwise.h's half_* functions). They exist to define and test those
// numerics on any machine; on the CPU the widening costs what the removed
// Casts cost (docs/benchmarks.md has the measured step).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/dispatch.h"
#include "runtime/cpu/half_convert.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// The 16-bit kernel of (domain, op): the float32 kernel registered for it on
// the CPU, over widened inputs, into float32 outputs narrowed afterwards.
// That kernel is looked up once, at the first call (the registry is complete
// by then): each twin covers the opsets its float32 kernel does, so the
// lookup's answer is the same for every node it runs.
KernelFn through_float32(std::string domain, std::string op) {
  struct Float32Kernel {
    std::once_flag found;
    const KernelDef* def = nullptr;
  };
  auto float32 = std::make_shared<Float32Kernel>();
  return [domain, op, float32](KernelContext& ctx) -> Status {
    std::call_once(float32->found, [&] {
      float32->def = KernelRegistry::instance().find(domain, op, ctx.opset(), DeviceKind::kCpu, DType::kFloat);
    });
    const KernelDef* f = float32->def;
    if (!f)
      return make_error(ErrorCode::kInternal, "{}: no float32 CPU kernel of {} to run in 16 bits", ctx.node().describe(), op);
    std::vector<Tensor> wide;
    wide.reserve(ctx.num_inputs());
    std::vector<const Tensor*> inputs(ctx.num_inputs(), nullptr);
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& in = ctx.input(i);
      if (!dtype_is_half(in.dtype())) {
        inputs[i] = &in;
        continue;
      }
      wide.push_back(ctx.allocate(DType::kFloat, in.dims()));
      widen_half(in, wide.back());
      inputs[i] = &wide.back();
    }
    KernelContext inner = ctx.with_inputs(std::move(inputs));
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      if (!ctx.has_output(i) || !dtype_is_half(ctx.shapes().output(i).dtype)) continue;
      inner.set_output(i, ctx.allocate(DType::kFloat, dims_from_shape(*ctx.shapes().output(i).shape)));
    }
    RETURN_IF_ERROR(f->fn(inner));
    for (size_t i = 0; i < ctx.num_outputs(); ++i) {
      if (!ctx.has_output(i)) continue;
      Tensor& produced = inner.outputs()[i];
      if (!dtype_is_half(ctx.shapes().output(i).dtype)) {
        ctx.set_output(i, std::move(produced));
        continue;
      }
      narrow_to_half(produced, ctx.output(i));
    }
    return Status::Ok();
  };
}

// Sum of three or more 16-bit inputs rounds after each addition, as the CUDA
// kernel's chain of Adds does and PyTorch's autograd does when it accumulates
// a 16-bit gradient; two inputs are one Add (one rounding either way).
Status half_sum(KernelContext& ctx) {
  if (ctx.num_inputs() <= 2) return through_float32("", "Sum")(ctx);
  Tensor& out = ctx.output(0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.input(i).dims() != out.dims() || ctx.input(i).dtype() != out.dtype())
      return unsupported("{}: a 16-bit Sum of {} inputs takes inputs of the output's shape and dtype",
                         ctx.node().describe(), ctx.num_inputs());
  dispatch_half(out.dtype(), [&]<typename H>() {
    H* o = out.data<H>();
    parallel_for(out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        H acc = ctx.input(0).data<H>()[j];
        for (size_t i = 1; i < ctx.num_inputs(); ++i)
          acc = H(static_cast<float>(acc) + static_cast<float>(ctx.input(i).data<H>()[j]));
        o[j] = acc;
      }
    });
  });
  return Status::Ok();
}

const std::vector<DType> kHalfTypes{DType::kBFloat16, DType::kFloat16};

#define ORT_HALF_TWIN(domain, op, min_opset)                                                                    \
  ORT_REGISTER_KERNEL_FOR_DTYPES(domain, op, min_opset, 1000, DeviceKind::kCpu, through_float32(domain, op), \
                                 kHalfTypes)

ORT_HALF_TWIN("", "Relu", 6);
ORT_HALF_TWIN("", "Tanh", 6);
ORT_HALF_TWIN("", "Sigmoid", 6);
ORT_HALF_TWIN("", "Neg", 6);
ORT_HALF_TWIN("", "Gelu", 20);
ORT_HALF_TWIN(kOrtTrainDomain, "Gelu", 1);
ORT_HALF_TWIN(kOrtTrainDomain, "Silu", 1);
ORT_HALF_TWIN("", "Add", 7);
ORT_HALF_TWIN("", "Sub", 7);
ORT_HALF_TWIN("", "Mul", 7);
ORT_HALF_TWIN("", "Div", 7);
ORT_REGISTER_KERNEL_FOR_DTYPES("", "Sum", 8, 1000, DeviceKind::kCpu, half_sum, kHalfTypes);
ORT_HALF_TWIN("", "Dropout", 7);
ORT_HALF_TWIN(kOrtTrainDomain, "ReluGrad", 1);
ORT_HALF_TWIN(kOrtTrainDomain, "SigmoidGrad", 1);
ORT_HALF_TWIN(kOrtTrainDomain, "TanhGrad", 1);
ORT_HALF_TWIN(kOrtTrainDomain, "GeluGrad", 1);
ORT_HALF_TWIN(kOrtTrainDomain, "SiluGrad", 1);
ORT_HALF_TWIN(kOrtTrainDomain, "DropoutGrad", 1);

}  // namespace
}  // namespace ort_train
