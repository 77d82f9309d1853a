// CPU kernels of ONNX's training operators (ai.onnx.preview.training v1), as
// the ONNX operator spec defines them. Inputs R (learning rate, scalar), T
// (step, int64 scalar), then n tensors X, n gradients G and the state tensors;
// outputs the updated X, then the updated state.
//   Adagrad:  r = R / (1 + T*decay_factor); G' = norm_coefficient*X + G;
//             H' = H + G'^2; X' = X - r*G' / (sqrt(H') + epsilon)
//   Adam:     G' = norm_coefficient*X + G; V' = alpha*V + (1-alpha)*G';
//             H' = beta*H + (1-beta)*G'^2; R' = T > 0 ? R*sqrt(1-beta^T)/(1-alpha^T) : R;
//             X' = (1 - norm_coefficient_post) * (X - R'*V'/(sqrt(H') + epsilon))
//   Momentum: G' = norm_coefficient*X + G; b = T > 0 ? beta : 1; V' = alpha*V + b*G';
//             standard: X' = X - R*V'; nesterov: X' = X - R*(G' + alpha*V')
#include <cmath>

#include "graph/dispatch.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

constexpr const char* kDomain = "ai.onnx.preview.training";

double scalar(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat: return t.data<float>()[0];
    case DType::kDouble: return t.data<double>()[0];
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[0]);
    default: return 0;
  }
}

// Calls fn.template operator()<T>(n, k, x, g, states..., outputs) per tensor k.
template <typename F>
Status per_tensor(KernelContext& ctx, size_t states, F&& fn) {
  size_t n = (ctx.num_inputs() - 2) / (2 + states);
  if (n == 0 || ctx.num_inputs() != 2 + n * (2 + states) || ctx.num_outputs() > n * (1 + states))
    return invalid_argument("{}: {} inputs do not split into X, G and {} state groups", ctx.node().describe(),
                            ctx.num_inputs(), states);
  for (size_t k = 0; k < n; ++k) {
    const Tensor& x = ctx.input(2 + k);
    bool ok = dispatch_float(x.dtype(), [&]<typename T>() { fn.template operator()<T>(n, k); });
    if (!ok) return unsupported_dtype(ctx, x.dtype());
  }
  return Status::Ok();
}

Status adagrad(KernelContext& ctx) {
  double r = scalar(ctx.input(0)), t = scalar(ctx.input(1));
  double decay = ctx.node().attr_float("decay_factor", 0.f), eps = ctx.node().attr_float("epsilon", 0.f);
  double norm = ctx.node().attr_float("norm_coefficient", 0.f);
  double rate = r / (1 + t * decay);
  return per_tensor(ctx, 1, [&]<typename T>(size_t n, size_t k) {
    const Tensor& x = ctx.input(2 + k);
    const T* xp = x.data<T>();
    const T* g = ctx.input(2 + n + k).data<T>();
    const T* h = ctx.input(2 + 2 * n + k).data<T>();
    T* xo = ctx.has_output(k) ? ctx.output(k).data<T>() : nullptr;
    T* ho = ctx.num_outputs() > n + k && ctx.has_output(n + k) ? ctx.output(n + k).data<T>() : nullptr;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double gg = norm * xp[i] + g[i], hh = h[i] + gg * gg;
      if (ho) ho[i] = static_cast<T>(hh);
      if (xo) xo[i] = static_cast<T>(xp[i] - rate * gg / (std::sqrt(hh) + eps));
    }
  });
}

Status adam(KernelContext& ctx) {
  double r = scalar(ctx.input(0)), t = scalar(ctx.input(1));
  double alpha = ctx.node().attr_float("alpha", 0.9f), beta = ctx.node().attr_float("beta", 0.999f);
  double eps = ctx.node().attr_float("epsilon", 0.f), norm = ctx.node().attr_float("norm_coefficient", 0.f);
  double post = ctx.node().attr_float("norm_coefficient_post", 0.f);
  double rate = t > 0 ? r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : r;
  return per_tensor(ctx, 2, [&]<typename T>(size_t n, size_t k) {
    const Tensor& x = ctx.input(2 + k);
    const T* xp = x.data<T>();
    const T* g = ctx.input(2 + n + k).data<T>();
    const T* v = ctx.input(2 + 2 * n + k).data<T>();
    const T* h = ctx.input(2 + 3 * n + k).data<T>();
    auto out = [&](size_t o) -> T* {
      return ctx.num_outputs() > o && ctx.has_output(o) ? ctx.output(o).data<T>() : nullptr;
    };
    T *xo = out(k), *vo = out(n + k), *ho = out(2 * n + k);
    for (int64_t i = 0; i < x.numel(); ++i) {
      double gg = norm * xp[i] + g[i];
      double vv = alpha * v[i] + (1 - alpha) * gg, hh = beta * h[i] + (1 - beta) * gg * gg;
      if (vo) vo[i] = static_cast<T>(vv);
      if (ho) ho[i] = static_cast<T>(hh);
      if (xo) xo[i] = static_cast<T>((1 - post) * (xp[i] - rate * vv / (std::sqrt(hh) + eps)));
    }
  });
}

Status momentum(KernelContext& ctx) {
  double r = scalar(ctx.input(0)), t = scalar(ctx.input(1));
  double alpha = ctx.node().attr_float("alpha", 0.f), beta = ctx.node().attr_float("beta", 0.f);
  double norm = ctx.node().attr_float("norm_coefficient", 0.f);
  std::string mode = ctx.node().attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return invalid_argument("{}: mode '{}' is not standard or nesterov", ctx.node().describe(), mode);
  double b = t > 0 ? beta : 1.0;
  return per_tensor(ctx, 1, [&]<typename T>(size_t n, size_t k) {
    const Tensor& x = ctx.input(2 + k);
    const T* xp = x.data<T>();
    const T* g = ctx.input(2 + n + k).data<T>();
    const T* v = ctx.input(2 + 2 * n + k).data<T>();
    T* xo = ctx.has_output(k) ? ctx.output(k).data<T>() : nullptr;
    T* vo = ctx.num_outputs() > n + k && ctx.has_output(n + k) ? ctx.output(n + k).data<T>() : nullptr;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double gg = norm * xp[i] + g[i], vv = alpha * v[i] + b * gg;
      if (vo) vo[i] = static_cast<T>(vv);
      if (xo) xo[i] = static_cast<T>(mode == "standard" ? xp[i] - r * vv : xp[i] - r * (gg + alpha * vv));
    }
  });
}

}  // namespace

ORT_REGISTER_KERNEL(kDomain, "Adagrad", 1, 1, DeviceKind::kCpu, adagrad);
ORT_REGISTER_KERNEL(kDomain, "Adam", 1, 1, DeviceKind::kCpu, adam);
ORT_REGISTER_KERNEL(kDomain, "Momentum", 1, 1, DeviceKind::kCpu, momentum);

}  // namespace ort_train
