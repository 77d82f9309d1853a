// Broadcast iteration for CPU kernels. Given an output shape and input shapes
// that broadcast to it (ONNX multidirectional rules), walks the output in
// row-major order calling fn(out_offset, in_offsets..., count) over runs where
// each input advances with a constant stride (0 or 1) so the inner loop is a
// plain vectorizable loop.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "graph/tensor.h"
#include "runtime/cpu/parallel.h"

namespace ort_train {

// Strides (in elements) of `in` viewed in the output's rank, 0 on broadcast dims.
std::vector<int64_t> broadcast_strides(const Dims& in, const Dims& out);

// Output dims of broadcasting the given dims (assumes they are compatible).
Dims broadcast_dims(const std::vector<const Dims*>& dims);

template <size_t N>
struct BroadcastPlan {
  Dims out;
  std::array<std::vector<int64_t>, N> strides;
  int64_t inner = 1;                     // length of the innermost run
  std::array<int64_t, N> inner_step{};   // 0 or 1: how each input moves within a run
};

template <size_t N>
BroadcastPlan<N> make_broadcast_plan(const Dims& out, const std::array<const Dims*, N>& ins) {
  BroadcastPlan<N> p;
  p.out = out;
  for (size_t k = 0; k < N; ++k) p.strides[k] = broadcast_strides(*ins[k], out);
  // Fuse trailing dims while every input is either contiguous over them or broadcast over them.
  int64_t rank = static_cast<int64_t>(out.size());
  p.inner = 1;
  std::array<int, N> mode{};  // -1 unset, 0 broadcast, 1 contiguous
  mode.fill(-1);
  int64_t d = rank - 1;
  for (; d >= 0; --d) {
    bool ok = true;
    for (size_t k = 0; k < N && ok; ++k) {
      int m = p.strides[k][d] == 0 ? 0 : 1;
      if (out[d] == 1) continue;
      if (m == 1 && p.strides[k][d] != p.inner) ok = false;
      if (mode[k] != -1 && mode[k] != m) ok = false;
    }
    if (!ok) break;
    for (size_t k = 0; k < N; ++k)
      if (out[d] != 1) mode[k] = p.strides[k][d] == 0 ? 0 : 1;
    p.inner *= out[d];
  }
  for (size_t k = 0; k < N; ++k) p.inner_step[k] = mode[k] == 0 ? 0 : 1;
  // Drop the fused trailing dims from the outer iteration.
  p.out.resize(static_cast<size_t>(d + 1));
  for (size_t k = 0; k < N; ++k) p.strides[k].resize(static_cast<size_t>(d + 1));
  return p;
}

// Runs fn(out_index, {in_index...}, run_length, {inner_step...}) over all runs, in parallel.
template <size_t N, typename F>
void for_each_broadcast_run(const BroadcastPlan<N>& p, F&& fn) {
  int64_t outer = num_elements(p.out);
  int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(p.inner, 1));
  parallel_for(outer, grain, [&](int64_t b, int64_t e) {
    int64_t rank = static_cast<int64_t>(p.out.size());
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    // Decompose b into a multi-index.
    int64_t rem = b;
    for (int64_t d = rank - 1; d >= 0; --d) {
      idx[d] = rem % p.out[d];
      rem /= p.out[d];
    }
    std::array<int64_t, N> off{};
    for (size_t k = 0; k < N; ++k)
      for (int64_t d = 0; d < rank; ++d) off[k] += idx[d] * p.strides[k][d];
    for (int64_t o = b; o < e; ++o) {
      fn(o * p.inner, off, p.inner);
      for (int64_t d = rank - 1; d >= 0; --d) {
        ++idx[d];
        for (size_t k = 0; k < N; ++k) off[k] += p.strides[k][d];
        if (idx[d] < p.out[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= p.strides[k][d] * p.out[d];
        idx[d] = 0;
      }
    }
  });
}

// out[i] = op(a[i], b[i]) with broadcasting; Out may differ from In (comparisons).
template <typename In, typename Out, typename Op>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  const In* pa = a.data<In>();
  const In* pb = b.data<In>();
  Out* po = out.data<Out>();
  if (a.dims() == b.dims()) {
    parallel_for(out.numel(), kElementwiseGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = op(pa[i], pb[i]);
    });
    return;
  }
  auto plan = make_broadcast_plan<2>(out.dims(), {&a.dims(), &b.dims()});
  for_each_broadcast_run(plan, [&](int64_t o, const std::array<int64_t, 2>& off, int64_t n) {
    const In* x = pa + off[0];
    const In* y = pb + off[1];
    Out* z = po + o;
    int64_t sa = plan.inner_step[0], sb = plan.inner_step[1];
    if (sa && sb) {
      for (int64_t i = 0; i < n; ++i) z[i] = op(x[i], y[i]);
    } else if (sa) {
      In yv = y[0];
      for (int64_t i = 0; i < n; ++i) z[i] = op(x[i], yv);
    } else if (sb) {
      In xv = x[0];
      for (int64_t i = 0; i < n; ++i) z[i] = op(xv, y[i]);
    } else {
      Out v = op(x[0], y[0]);
      for (int64_t i = 0; i < n; ++i) z[i] = v;
    }
  });
}

}  // namespace ort_train
