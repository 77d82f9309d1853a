// CPU kernels of the loss gradients, with the forward's layout: scores
// [N, C, d...], labels [N, d...], optional class weights [C].
//   SoftmaxCrossEntropyLossGrad(dLoss, log_prob, labels[, weights])
//       dScores[n,c,d] = g(n,d) * w(y) * (exp(log_prob[n,c,d]) - [c == y])
//   NegativeLogLikelihoodLossGrad(dLoss, input, labels[, weights])
//       dInput[n,c,d] = -g(n,d) * w(y) * [c == y]
// with y = labels[n,d], g = dLoss (reduction sum), dLoss[n,d] (none), or
// dLoss / (sum of w(y) over targets not ignored) (mean, as the forward), and 0
// where y == ignore_index.
#include <cmath>
#include <type_traits>

#include "graph/dispatch.h"
#include "runtime/cpu/loss_rows.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <bool kSoftmax>
Status loss_grad(KernelContext& ctx) {
  const Tensor& dloss = ctx.input(0);
  const Tensor& ref = ctx.input(1);  // log-probabilities (SCE) or the NLL input
  std::vector<int64_t> labels = ctx.input(2).to_int64_vector();
  const Tensor* weights = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  std::string reduction = ctx.node().attr_string("reduction", "mean");
  const Attribute* ignore_attr = ctx.node().attr("ignore_index");
  int64_t ignore = ignore_attr ? ignore_attr->i : 0;
  int64_t N = ref.dims()[0], C = ref.dims()[1];
  int64_t D = N * C == 0 ? 0 : ref.numel() / (N * C);
  if (static_cast<int64_t>(labels.size()) != N * D)
    return shape_error("{}: {} labels for {} score rows", ctx.node().describe(), labels.size(), N * D);
  Status st;
  bool ok = dispatch_float(ref.dtype(), [&]<typename T>() {
    const T* w = weights ? weights->data<T>() : nullptr;
    const T* g = dloss.data<T>();
    auto kept = [&](int64_t y) { return !(ignore_attr && y == ignore); };
    double scale = static_cast<double>(g[0]);
    if (reduction == "mean") {
      double weight_sum = 0;
      // (A label out of [0, C) is the forward's error; here its row is zero
      // and it counts for nothing, so a file's stray label reads no weight
      // past the table.)
      for (int64_t y : labels)
        if (kept(y) && y >= 0 && y < C) weight_sum += w ? static_cast<double>(w[y]) : 1.0;
      scale = weight_sum == 0 ? 0.0 : scale / weight_sum;
    }
    const T* r = ref.data<T>();
    T* out = ctx.output(0).data<T>();
    parallel_for(N * D, 64, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t n = t / D, d = t % D, y = labels[static_cast<size_t>(t)];
        T* orow = out + n * C * D + d;
        const T* rrow = r + n * C * D + d;
        if (!kept(y) || y < 0 || y >= C) {
          for (int64_t c = 0; c < C; ++c) orow[c * D] = T(0);
          continue;
        }
        double gi = (reduction == "none" ? static_cast<double>(g[t]) : scale) * (w ? static_cast<double>(w[y]) : 1.0);
        if constexpr (std::is_same_v<T, float>) {
          if (kSoftmax && D == 1) {  // contiguous classes: one vectorizable loop, then the target's -1
            scaled_exp_row_f32(rrow, static_cast<float>(gi), orow, C);
            orow[y] = static_cast<float>(gi * (std::exp(static_cast<double>(rrow[y])) - 1.0));
            continue;
          }
        }
        for (int64_t c = 0; c < C; ++c) {
          double v = kSoftmax ? std::exp(static_cast<double>(rrow[c * D])) : 0.0;
          if (c == y) v -= 1.0;
          orow[c * D] = static_cast<T>(gi * v);
        }
      }
    });
  });
  if (!ok) return unsupported_dtype(ctx, ref.dtype());
  return st;
}

}  // namespace

ORT_REGISTER_KERNEL(kOrtTrainDomain, "SoftmaxCrossEntropyLossGrad", 1, 1000, DeviceKind::kCpu, loss_grad<true>);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "NegativeLogLikelihoodLossGrad", 1, 1000, DeviceKind::kCpu, loss_grad<false>);

}  // namespace ort_train
