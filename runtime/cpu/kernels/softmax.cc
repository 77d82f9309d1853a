// CPU kernels: Softmax and LogSoftmax, numerically stable (max subtracted),
// and com.ort_train BiasSoftmax, Softmax(X + B) over the last axis.
// Before opset 13 the input is coerced to 2-D at `axis` and normalized over
// everything from `axis` on; from 13 on only `axis` is normalized.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "graph/dispatch.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

// An all -inf row would give (-inf) - (-inf) = NaN; shifting by 0 instead yields
// exp(-inf) = 0 and the same NaN/-inf result the reference computes.
template <typename T>
T finite_shift(T mx) {
  return std::isinf(mx) && mx < 0 ? T(0) : mx;
}

// One contiguous row of n values (the axis is the innermost dimension).
// y may alias x: every element is read before it is written.
template <typename T, bool kLog>
void softmax_row(const T* x, T* y, int64_t n) {
  T mx = -std::numeric_limits<T>::infinity();
  for (int64_t k = 0; k < n; ++k) mx = std::max(mx, x[k]);
  mx = finite_shift(mx);
  T sum = 0;
  if constexpr (kLog) {
    for (int64_t k = 0; k < n; ++k) sum += std::exp(x[k] - mx);
    // (x - max) - log(sum): subtracting max first keeps float precision for large logits.
    T log_sum = std::log(sum);
    for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - mx) - log_sum;
  } else {
    for (int64_t k = 0; k < n; ++k) {
      y[k] = std::exp(x[k] - mx);
      sum += y[k];
    }
    T inv = T(1) / sum;
    for (int64_t k = 0; k < n; ++k) y[k] *= inv;
  }
}

// `width` interleaved columns of an [n, stride] block (the axis is not innermost):
// the loops run along the contiguous dimension, one running max/sum per column,
// instead of striding through memory once per column.
template <typename T, bool kLog>
void softmax_columns(const T* x, T* y, int64_t n, int64_t stride, int64_t width, T* mx, T* sum) {
  std::fill(mx, mx + width, -std::numeric_limits<T>::infinity());
  std::fill(sum, sum + width, T(0));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < width; ++i) mx[i] = std::max(mx[i], x[k * stride + i]);
  for (int64_t i = 0; i < width; ++i) mx[i] = finite_shift(mx[i]);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t i = 0; i < width; ++i) {
      T e = std::exp(x[k * stride + i] - mx[i]);
      if constexpr (!kLog) y[k * stride + i] = e;
      sum[i] += e;
    }
  if constexpr (kLog) {
    for (int64_t i = 0; i < width; ++i) sum[i] = std::log(sum[i]);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < width; ++i) y[k * stride + i] = (x[k * stride + i] - mx[i]) - sum[i];
  } else {
    for (int64_t i = 0; i < width; ++i) sum[i] = T(1) / sum[i];
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < width; ++i) y[k * stride + i] *= sum[i];
  }
}

// x viewed as [outer, n, inner], normalized along n.
template <typename T, bool kLog>
void softmax_3d(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) softmax_row<T, kLog>(x + o * n, y + o * n, n);
    });
    return;
  }
  // Work items are (outer index, block of columns) so a small `outer` still spreads over threads.
  const int64_t block = std::min<int64_t>(inner, 512);
  const int64_t blocks = (inner + block - 1) / block;
  parallel_for(outer * blocks, std::max<int64_t>(1, kElementwiseGrain / (n * block)), [&](int64_t b, int64_t e) {
    std::vector<T> mx(block), sum(block);
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / blocks, c0 = (t % blocks) * block;
      int64_t offset = o * n * inner + c0;
      softmax_columns<T, kLog>(x + offset, y + offset, n, inner, std::min(block, inner - c0), mx.data(), sum.data());
    }
  });
}

template <bool kLog>
Status softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  int64_t rank = x.rank();
  int64_t axis = ctx.node().attr_int("axis", ctx.opset() >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  axis = std::clamp<int64_t>(axis, 0, rank);  // the rule validated it; rank 0 is a one-element row
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[d];
  if (ctx.opset() >= 13) {
    n = axis < rank ? x.dims()[axis] : 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dims()[d];
  } else {
    for (int64_t d = axis; d < rank; ++d) n *= x.dims()[d];
  }
  if (x.numel() == 0) return Status::Ok();
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() { softmax_3d<T, kLog>(x.data<T>(), out.data<T>(), outer, n, inner); });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

// bias_softmax_fusion's op: each row of X + B (broadcast) is written into Y
// and normalized there while it is in cache, where Add then Softmax made two
// passes over the whole [B, H, T, T] scores. The same float additions and the
// same softmax_row, so the values are the pair's exactly.
Status bias_softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  const Dims& dims = out.dims();
  if (dims.empty() || b.dtype() != x.dtype()) return unsupported_dtype(ctx, b.dtype());
  if (out.numel() == 0) return Status::Ok();
  const int64_t n = dims.back(), rows = out.numel() / n, rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> xs = broadcast_strides(x.dims(), dims), bs = broadcast_strides(b.dims(), dims);
  bool ok = dispatch_float(x.dtype(), [&]<typename T>() {
    const T* px = x.data<T>();
    const T* pb = b.data<T>();
    T* py = out.data<T>();
    parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, xoff = 0, boff = 0;
        for (int64_t d = rank - 2; d >= 0; --d) {
          int64_t i = rem % dims[d];
          rem /= dims[d];
          xoff += i * xs[d];
          boff += i * bs[d];
        }
        const T* xr = px + xoff;
        const T* br = pb + boff;
        T* yr = py + r * n;
        const int64_t xstep = xs[rank - 1], bstep = bs[rank - 1];
        if (xstep == 1 && bstep == 1) {
          for (int64_t k = 0; k < n; ++k) yr[k] = xr[k] + br[k];
        } else {
          for (int64_t k = 0; k < n; ++k) yr[k] = xr[k * xstep] + br[k * bstep];
        }
        softmax_row<T, false>(yr, yr, n);
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL_INPLACE("Softmax", 1, 1000, softmax<false>);
ORT_REGISTER_CPU_KERNEL_INPLACE("LogSoftmax", 1, 1000, softmax<true>);
ORT_REGISTER_KERNEL(kOrtTrainDomain, "BiasSoftmax", 1, 1000, DeviceKind::kCpu, bias_softmax);

}  // namespace ort_train
