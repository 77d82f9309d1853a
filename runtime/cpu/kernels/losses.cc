// CPU kernels: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss.
// Scores [N, C, d...] are read with the class axis strided by the spatial size;
// SoftmaxCrossEntropyLoss computes a stable log-softmax over C first.
// `mean` divides by the summed weights of the targets that are not ignore_index.
#include <cmath>

#include <type_traits>

#include "graph/dispatch.h"
#include "runtime/cpu/loss_rows.h"
#include "runtime/cpu/parallel.h"
#include "runtime/index_fault_error.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

template <bool kSoftmax>
Status loss(KernelContext& ctx) {
  const Tensor& scores = ctx.input(0);
  const Tensor& labels_t = ctx.input(1);
  const Tensor* weights = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  std::string reduction = ctx.node().attr_string("reduction", "mean");
  const Attribute* ignore_attr = ctx.node().attr("ignore_index");
  int64_t ignore = ignore_attr ? ignore_attr->i : 0;
  int64_t N = scores.dims()[0], C = scores.dims()[1];
  int64_t D = N * C == 0 ? 0 : scores.numel() / (N * C);
  std::vector<int64_t> labels = labels_t.to_int64_vector();
  Tensor& out = ctx.output(0);
  Status st;
  bool ok = dispatch_float(scores.dtype(), [&]<typename T>() {
    const T* s = scores.data<T>();
    // log-probabilities: computed (SoftmaxCrossEntropyLoss) or given (NLL).
    const T* logp = s;
    Tensor lp;
    if constexpr (kSoftmax) {
      lp = ctx.num_outputs() > 1 && ctx.has_output(1) ? ctx.output(1) : ctx.allocate(scores.dtype(), scores.dims());
      T* l = lp.data<T>();
      parallel_for(N * D, 64, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          int64_t n = t / D, d = t % D;
          const T* row = s + n * C * D + d;
          T* lrow = l + n * C * D + d;
          if constexpr (std::is_same_v<T, float>) {
            if (D == 1) {  // contiguous classes (runtime/cpu/loss_rows.h)
              log_softmax_row_f32(row, lrow, C);
              continue;
            }
          }
          double mx = -INFINITY;
          for (int64_t c = 0; c < C; ++c) mx = std::max(mx, static_cast<double>(row[c * D]));
          double sum = 0;
          for (int64_t c = 0; c < C; ++c) sum += std::exp(static_cast<double>(row[c * D]) - mx);
          double lse = mx + std::log(sum);
          for (int64_t c = 0; c < C; ++c) lrow[c * D] = static_cast<T>(row[c * D] - lse);
        }
      });
      logp = l;
    }
    const T* w = weights ? weights->data<T>() : nullptr;
    std::vector<double> per(static_cast<size_t>(N * D), 0.0);
    double loss_sum = 0, weight_sum = 0;
    for (int64_t t = 0; t < N * D; ++t) {
      int64_t n = t / D, d = t % D;
      int64_t y = labels[static_cast<size_t>(t)];
      if (ignore_attr && y == ignore) continue;
      if (y < 0 || y >= C) {
        st = label_error(ctx.node().describe(), y, C);
        return;
      }
      double wt = w ? static_cast<double>(w[y]) : 1.0;
      double v = -static_cast<double>(logp[(n * C + y) * D + d]) * wt;
      per[static_cast<size_t>(t)] = v;
      loss_sum += v;
      weight_sum += wt;
    }
    T* o = out.data<T>();
    if (reduction == "none") {
      for (int64_t t = 0; t < N * D; ++t) o[t] = static_cast<T>(per[static_cast<size_t>(t)]);
    } else if (reduction == "sum") {
      o[0] = static_cast<T>(loss_sum);
    } else {
      o[0] = static_cast<T>(weight_sum == 0 ? 0.0 : loss_sum / weight_sum);
    }
  });
  if (!ok) return unsupported_dtype(ctx, scores.dtype());
  return st;
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("SoftmaxCrossEntropyLoss", 12, 1000, loss<true>);
ORT_REGISTER_CPU_KERNEL("NegativeLogLikelihoodLoss", 12, 1000, loss<false>);

}  // namespace ort_train
