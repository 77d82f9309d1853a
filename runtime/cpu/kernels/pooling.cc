// CPU kernels: MaxPool (with optional Indices), AveragePool, LpPool,
// GlobalAveragePool, GlobalMaxPool, GlobalLpPool over 1-D/2-D/3-D windows; one
// (image, channel) plane per task. LpPool's arithmetic is numerics/lp_pool.h's.
#include <cmath>
#include <limits>

#include "graph/dispatch.h"
#include "graph/ops/window_geometry.h"
#include "numerics/lp_pool.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/pool_window.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

// One window's running result, shared by both walks below: the maximum
// (the first element inside the input always taken, later ones when larger,
// so ties go to the first) and its index, or the sum with the counts of
// elements inside the input and inside the padded input.
template <typename T, PoolKind kind>
struct WindowAccumulator {
  int64_t p_order;
  T best = -std::numeric_limits<T>::infinity();
  int64_t best_idx = -1;
  T sum = 0;
  int64_t count = 0, padded_count = 0;

  // `index()` is what Indices records for v, computed only when v is the new maximum.
  template <typename Index>
  void add(T v, Index&& index) {
    if constexpr (kind == PoolKind::kMax) {
      if (v > best || best_idx < 0) {
        best = v;
        best_idx = index();
      }
    } else if constexpr (kind == PoolKind::kLp) {
      sum += lp_pool_term(v, p_order);
    } else {
      sum += v;
      ++count;
    }
  }
  // The window's output, and its Indices entry when asked.
  T finish(bool count_include_pad, int64_t plane_offset, int64_t* index) const {
    if constexpr (kind == PoolKind::kMax) {
      if (index) *index = plane_offset + best_idx;
      return best;
    }
    if constexpr (kind == PoolKind::kLp) return lp_pool_root(sum, p_order);
    const int64_t div = count_include_pad ? padded_count : count;
    return div > 0 ? sum / static_cast<T>(div) : T(0);
  }
};

template <typename T, PoolKind kind>
void pool_plane(const T* x, T* y, int64_t* indices, int64_t plane_offset, const std::vector<WindowDim>& geo,
                bool count_include_pad, bool column_major_indices, int64_t p_order) {
  int64_t out_size = 1;
  for (const WindowDim& w : geo) out_size *= w.out;
  std::vector<int64_t> o(geo.size(), 0);
  for (int64_t p = 0; p < out_size; ++p, next_window(geo, o)) {
    WindowAccumulator<T, kind> acc{p_order};
    for_each_window_element(geo, o, [&](const std::vector<int64_t>& coords, int64_t off, bool inside, bool in_padded) {
      acc.padded_count += in_padded;
      if (!inside) return;
      acc.add(x[off], [&] {
        if (!column_major_indices) return off;
        int64_t col_off = 0, col_stride = 1;  // storage_order=1: the first spatial dim varies fastest
        for (size_t d = 0; d < geo.size(); ++d) {
          col_off += coords[d] * col_stride;
          col_stride *= geo[d].in;
        }
        return col_off;
      });
    });
    y[p] = acc.finish(count_include_pad, plane_offset, indices ? indices + p : nullptr);
  }
}

// pool_plane for one or two spatial dims (a 1-D window is a 2-D one of height
// 1): the same positions, order and ties as the walk above, without its
// per-element index arithmetic and per-position vector (ResNet's stem MaxPool
// took 11 ms of a 200 ms step through it).
template <typename T, PoolKind kind>
void pool_plane_2d(const T* x, T* y, int64_t* indices, int64_t plane_offset, const WindowDim& gh,
                   const WindowDim& gw, bool count_include_pad, bool column_major_indices, int64_t p_order) {
  for (int64_t oh = 0; oh < gh.out; ++oh) {
    const int64_t h0 = oh * gh.stride - gh.pad_begin;
    for (int64_t ow = 0; ow < gw.out; ++ow, ++y) {
      const int64_t w0 = ow * gw.stride - gw.pad_begin;
      WindowAccumulator<T, kind> acc{p_order};
      for (int64_t kh = 0; kh < gh.kernel; ++kh) {
        const int64_t ih = h0 + kh * gh.dilation;
        const bool inside_h = ih >= 0 && ih < gh.in;
        const bool padded_h = ih >= -gh.pad_begin && ih < gh.in + gh.pad_end;
        for (int64_t kw = 0; kw < gw.kernel; ++kw) {
          const int64_t iw = w0 + kw * gw.dilation;
          acc.padded_count += padded_h && iw >= -gw.pad_begin && iw < gw.in + gw.pad_end;
          if (!inside_h || iw < 0 || iw >= gw.in) continue;
          const int64_t off = ih * gw.in + iw;
          acc.add(x[off], [&] { return column_major_indices ? ih + iw * gh.in : off; });
        }
      }
      *y = acc.finish(count_include_pad, plane_offset, indices ? indices++ : nullptr);
    }
  }
}

template <PoolKind kKind>
Status pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  std::vector<int64_t> spatial(X.dims().begin() + 2, X.dims().end());
  Node node = ctx.node();
  if (kKind == PoolKind::kAverage && ctx.opset() < 19) {
    // AveragePool gained dilations only at opset 19; ignore stray ones before.
    std::erase_if(node.attributes, [](const Attribute& a) { return a.name == "dilations"; });
  }
  ASSIGN_OR_RETURN(auto geo, window_geometry(node, spatial, node.attr_ints("kernel_shape"), true));
  int64_t planes = X.dims()[0] * X.dims()[1], in_size = 1, out_size = 1;
  for (const WindowDim& w : geo) {
    in_size *= w.in;
    out_size *= w.out;
  }
  bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  int64_t p_order = 0;
  if (kKind == PoolKind::kLp) {
    ASSIGN_OR_RETURN(p_order, lp_pool_order(ctx.node(), ctx.opset()));
  }
  bool column_major = ctx.node().attr_int("storage_order", 0) != 0;
  int64_t* indices = ctx.has_output(1) ? ctx.output(1).data<int64_t>() : nullptr;
  // MaxPool also runs on integer images (uint8 is common); AveragePool stays float.
  auto body = [&]<typename T>() {
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        int64_t* plane_indices = indices ? indices + pl * out_size : nullptr;
        if (geo.size() == 1 || geo.size() == 2)
          pool_plane_2d<T, kKind>(x + pl * in_size, y + pl * out_size, plane_indices, pl * in_size,
                                  geo.size() == 2 ? geo[0] : WindowDim{.in = 1, .out = 1}, geo.back(), include_pad,
                                  column_major, p_order);
        else
          pool_plane<T, kKind>(x + pl * in_size, y + pl * out_size, plane_indices, pl * in_size, geo, include_pad,
                               column_major, p_order);
      }
    });
  };
  bool ok = kKind == PoolKind::kMax ? dispatch_numeric(X.dtype(), body) : dispatch_float(X.dtype(), body);
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

template <PoolKind kKind>
Status global_pool(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  int64_t planes = X.dims()[0] * X.dims()[1];
  int64_t size = planes ? X.numel() / planes : 0;
  int64_t p_order = 0;
  if (kKind == PoolKind::kLp) {
    ASSIGN_OR_RETURN(p_order, lp_pool_order(ctx.node(), ctx.opset()));
  }
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    parallel_for(planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        const T* p = x + pl * size;
        if (kKind == PoolKind::kMax) {
          T m = -std::numeric_limits<T>::infinity();
          for (int64_t i = 0; i < size; ++i) m = std::max(m, p[i]);
          y[pl] = m;
        } else if (kKind == PoolKind::kLp) {
          T s = 0;
          for (int64_t i = 0; i < size; ++i) s += lp_pool_term(p[i], p_order);
          y[pl] = lp_pool_root(s, p_order);
        } else {
          T s = 0;
          for (int64_t i = 0; i < size; ++i) s += p[i];
          y[pl] = s / static_cast<T>(size);
        }
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("MaxPool", 1, 1000, pool<PoolKind::kMax>);
ORT_REGISTER_CPU_KERNEL("AveragePool", 1, 1000, pool<PoolKind::kAverage>);
ORT_REGISTER_CPU_KERNEL("GlobalAveragePool", 1, 1000, global_pool<PoolKind::kAverage>);
ORT_REGISTER_CPU_KERNEL("GlobalMaxPool", 1, 1000, global_pool<PoolKind::kMax>);
ORT_REGISTER_CPU_KERNEL("LpPool", 1, 1000, pool<PoolKind::kLp>);
ORT_REGISTER_CPU_KERNEL("GlobalLpPool", 1, 1000, global_pool<PoolKind::kLp>);

}  // namespace ort_train
