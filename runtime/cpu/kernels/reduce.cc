// CPU kernels for the Reduce* family. The input is viewed as alternating runs of
// kept and reduced dims; after merging neighbours every reduction is one of
// [outer, reduce, inner] shapes, handled with contiguous inner loops:
// inner == 1 (reduce the last axis: row sums) or a strided accumulation over
// rows (reduce leading axes: bias-gradient style). Accumulation is in double for
// float inputs so sums of many terms stay accurate.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "graph/dispatch.h"
#include "graph/ops/reduce.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/kernels/reduce.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

enum class Kind { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSumExp };

template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;

template <typename T>
Acc<T> init(Kind k) {
  using A = Acc<T>;
  switch (k) {
    case Kind::kMax:
      return std::is_floating_point_v<T> ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
    case Kind::kMin:
      return std::is_floating_point_v<T> ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
    case Kind::kProd: return A(1);
    default: return A(0);
  }
}

template <typename T>
inline Acc<T> step(Kind k, Acc<T> a, T v) {
  using A = Acc<T>;
  A x = static_cast<A>(v);
  switch (k) {
    case Kind::kMax: return (x > a || (std::is_floating_point_v<T> && x != x)) ? x : a;
    case Kind::kMin: return (x < a || (std::is_floating_point_v<T> && x != x)) ? x : a;
    case Kind::kProd: return a * x;
    case Kind::kSumSquare: case Kind::kL2: return a + x * x;
    case Kind::kL1: return a + (x < 0 ? -x : x);
    default: return a + x;
  }
}

template <typename T>
T finish(Kind k, Acc<T> a, int64_t n) {
  switch (k) {
    case Kind::kMean: return static_cast<T>(a / static_cast<Acc<T>>(n == 0 ? 1 : n));
    case Kind::kL2: return static_cast<T>(std::sqrt(static_cast<double>(a)));
    default: return static_cast<T>(a);
  }
}

// Reduces x viewed as [outer, n, inner] over n into y [outer, inner].
template <typename T>
void reduce_3d(Kind k, const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  if (k == Kind::kLogSumExp) {
    parallel_for(outer * inner, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const T* p = x + (t / inner) * n * inner + t % inner;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(p[i * inner]));
        if (std::isinf(mx)) {
          y[t] = static_cast<T>(mx);
          continue;
        }
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(p[i * inner]) - mx);
        y[t] = static_cast<T>(mx + std::log(s));
      }
    });
    return;
  }
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* p = x + o * n;
        Acc<T> a = init<T>(k);
        for (int64_t i = 0; i < n; ++i) a = step<T>(k, a, p[i]);
        y[o] = finish<T>(k, a, n);
      }
    });
    return;
  }
  // Walk rows of `inner` contiguous values, accumulating column-wise, in
  // blocks of columns small enough that a bias gradient's [rows, 768] spreads
  // over every thread. Each column is summed in row order whatever the
  // blocking, so the result does not depend on the thread count.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(outer * blocks, 1, [&](int64_t b, int64_t e) {
    Acc<T> acc[kBlock];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / blocks, c0 = (t % blocks) * kBlock, w = std::min(inner - c0, kBlock);
      const T* col = x + o * n * inner + c0;
      std::fill(acc, acc + w, init<T>(k));
      if (k == Kind::kSum || k == Kind::kMean) {  // the bias-gradient case: a plain, vectorizable add
        for (int64_t i = 0; i < n; ++i)
          for (int64_t c = 0; c < w; ++c) acc[c] += static_cast<Acc<T>>(col[i * inner + c]);
      } else {
        for (int64_t i = 0; i < n; ++i)
          for (int64_t c = 0; c < w; ++c) acc[c] = step<T>(k, acc[c], col[i * inner + c]);
      }
      for (int64_t c = 0; c < w; ++c) y[o * inner + c0 + c] = finish<T>(k, acc[c], n);
    }
  });
}

// Reduces x over the dims marked in `reduced` into out (same element count as
// the kept dims). False when the dtype is not numeric.
template <Kind kKind>
bool reduce_axes(const Tensor& x, const std::vector<bool>& reduced, Tensor& out) {
  // Merge dims into groups of (kept | reduced) runs: [k0, r0, k1, r1, ...].
  std::vector<int64_t> sizes;
  std::vector<bool> is_reduced;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (x.dims()[d] == 1) continue;
    if (!sizes.empty() && is_reduced.back() == reduced[d]) {
      sizes.back() *= x.dims()[d];
    } else {
      sizes.push_back(x.dims()[d]);
      is_reduced.push_back(reduced[d]);
    }
  }
  bool ok = dispatch_numeric(x.dtype(), [&]<typename T>() {
    T* y = out.data<T>();
    if (x.numel() == 0) {  // empty reduction: the identity of the operation
      for (int64_t i = 0; i < out.numel(); ++i)
        y[i] = kKind == Kind::kLogSumExp ? static_cast<T>(-std::numeric_limits<double>::infinity())
                                         : finish<T>(kKind, init<T>(kKind), 0);
      return;
    }
    // Reduce one reduced run at a time, innermost first, through temporaries.
    std::vector<T> cur, next;
    const T* src = x.data<T>();  // the first pass reads the input in place
    std::vector<int64_t> sz = sizes;
    std::vector<bool> red = is_reduced;
    int64_t total_n = 1;
    for (size_t g = 0; g < sz.size(); ++g)
      if (red[g]) total_n *= sz[g];
    // Mean divides once at the end; intermediate passes sum.
    Kind pass_kind = kKind == Kind::kMean ? Kind::kSum : kKind;
    bool first = true;
    for (int64_t g = static_cast<int64_t>(sz.size()) - 1; g >= 0; --g) {
      if (!red[g]) continue;
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < g; ++i) outer *= sz[i];
      for (size_t i = g + 1; i < sz.size(); ++i) inner *= sz[i];
      // After the first pass, L2/SumSquare/L1/LogSumExp combine partial results differently.
      Kind k = pass_kind;
      if (!first) {
        if (k == Kind::kSumSquare || k == Kind::kL1) k = Kind::kSum;
      }
      next.resize(static_cast<size_t>(outer * inner));
      if (!first && pass_kind == Kind::kL2) {
        // partial L2 norms: combine as sqrt(sum of squares)
        reduce_3d<T>(Kind::kL2, src, next.data(), outer, sz[g], inner);
      } else {
        reduce_3d<T>(k, src, next.data(), outer, sz[g], inner);
      }
      cur.swap(next);
      src = cur.data();
      sz[g] = 1;
      first = false;
    }
    for (int64_t i = 0; i < out.numel(); ++i) {
      T v = src[i];
      // With no reduced dim of size > 1 there was no pass and src is the input:
      // each output reduces one element, which the square/abs kinds still transform.
      if (first) v = finish<T>(kKind, step<T>(kKind, init<T>(kKind), v), 1);
      else if (kKind == Kind::kMean) v = static_cast<T>(static_cast<Acc<T>>(v) / static_cast<Acc<T>>(total_n));
      y[i] = v;
    }
  });
  return ok;
}

template <Kind kKind>
Status reduce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor* axes = ctx.has_input(1) ? &ctx.input(1) : nullptr;
  ASSIGN_OR_RETURN(auto r, resolve_reduce_axes(ctx.node(), ctx.opset(), x.rank(), axes, axes != nullptr));
  if (r.noop) {
    ctx.alias_output(0, x);
    return Status::Ok();
  }
  if (x.dtype() == DType::kBool && (kKind == Kind::kMax || kKind == Kind::kMin)) {
    // Opset 20's bool ReduceMax/ReduceMin (any/all): bools are stored as
    // bytes 0 and 1, whose max and min as uint8 are the answer.
    Tensor bytes(DType::kUInt8, x.dims(), x.storage());
    Tensor out(DType::kUInt8, ctx.output(0).dims(), ctx.output(0).storage());
    return reduce_axes<kKind>(bytes, r.reduced, out) ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
  }
  return reduce_axes<kKind>(x, r.reduced, ctx.output(0)) ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

// ReduceLogSum: log of ReduceSum (its ONNX function body; with
// noop_with_empty_axes, of the input itself).
Status reduce_log_sum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!dtype_is_float(x.dtype())) return unsupported_dtype(ctx, x.dtype());
  const Tensor* axes = ctx.has_input(1) ? &ctx.input(1) : nullptr;
  ASSIGN_OR_RETURN(auto r, resolve_reduce_axes(ctx.node(), ctx.opset(), x.rank(), axes, axes != nullptr));
  Tensor& out = ctx.output(0);
  if (r.noop) std::memcpy(out.raw(), x.raw(), x.nbytes());
  else if (!reduce_axes<Kind::kSum>(x, r.reduced, out)) return unsupported_dtype(ctx, x.dtype());
  dispatch_float(out.dtype(), [&]<typename T>() {
    T* y = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) y[i] = std::log(y[i]);
  });
  return Status::Ok();
}

}  // namespace

bool sum_axes(const Tensor& x, const std::vector<bool>& reduced, Tensor& out) {
  return reduce_axes<Kind::kSum>(x, reduced, out);
}

ORT_REGISTER_CPU_KERNEL("ReduceSum", 1, 1000, reduce<Kind::kSum>);
ORT_REGISTER_CPU_KERNEL("ReduceLogSum", 1, 1000, reduce_log_sum);
ORT_REGISTER_CPU_KERNEL("ReduceMean", 1, 1000, reduce<Kind::kMean>);
ORT_REGISTER_CPU_KERNEL("ReduceMax", 1, 1000, reduce<Kind::kMax>);
ORT_REGISTER_CPU_KERNEL("ReduceMin", 1, 1000, reduce<Kind::kMin>);
ORT_REGISTER_CPU_KERNEL("ReduceProd", 1, 1000, reduce<Kind::kProd>);
ORT_REGISTER_CPU_KERNEL("ReduceSumSquare", 1, 1000, reduce<Kind::kSumSquare>);
ORT_REGISTER_CPU_KERNEL("ReduceL1", 1, 1000, reduce<Kind::kL1>);
ORT_REGISTER_CPU_KERNEL("ReduceL2", 1, 1000, reduce<Kind::kL2>);
ORT_REGISTER_CPU_KERNEL("ReduceLogSumExp", 1, 1000, reduce<Kind::kLogSumExp>);

}  // namespace ort_train
