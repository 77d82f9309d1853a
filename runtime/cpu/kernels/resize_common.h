// The per-dim taps of a Resize node at run time (scales from the scales input,
// or out/in when sizes were given), for the forward and gradient kernels.
#pragma once
#include <vector>

#include "graph/ops/resize_target.h"
#include "runtime/cpu/resize_taps.h"
#include "runtime/kernel.h"

namespace ort_train {

// `scales` and `sizes` may be null or empty (the other was given); their
// per-dim scale comes from graph/ops/resize_target.h. An empty output needs
// no taps and gets none: a file can ask for [0, 4.7e10] (1.5 TB of taps for
// no element). An empty input dim cannot feed a non-empty output: refused.
inline Status resize_plan(const Node& node, int64_t opset, const Dims& in, const Dims& out, const Tensor* scales,
                          const Tensor* sizes, std::vector<std::vector<ResizeTap>>& plan) {
  plan.assign(in.size(), {});
  int64_t total = 1;
  for (int64_t v : out) total *= v;
  if (total == 0) return Status::Ok();
  std::vector<double> scale(in.size());
  for (size_t d = 0; d < in.size(); ++d) scale[d] = in[d] > 0 ? static_cast<double>(out[d]) / static_cast<double>(in[d]) : 1.0;
  if ((scales && scales->numel() > 0) || (sizes && sizes->numel() > 0)) {
    ASSIGN_OR_RETURN(ResizeTarget target, resize_target(node, std::vector<int64_t>(in.begin(), in.end()), scales, sizes));
    for (size_t d = 0; d < in.size(); ++d)
      if (target.sizes[d] != out[d])
        return shape_error("{}: dim {} is {} where its scales or sizes make {}", node.describe(), d, out[d],
                           target.sizes[d]);
    scale = target.scales;
  }
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 0)
      return shape_error("{}: dim {} of the input is empty but the output's is {}", node.describe(), d, out[d]);
    plan[d] = resize_taps(node, opset, in[d], out[d], scale[d]);
  }
  return Status::Ok();
}

// Calls fn(out_index, in_index, weight) for every tap of every output element.
template <typename F>
void for_each_resize_tap(const Dims& in, const Dims& out, const std::vector<std::vector<ResizeTap>>& plan, F&& fn) {
  size_t rank = in.size();
  std::vector<int64_t> o(rank, 0), in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
  int64_t total = 1;
  for (int64_t v : out) total *= v;
  for (int64_t p = 0; p < total; ++p) {
    // Enumerate the 2^rank tap combinations, skipping zero-weight taps.
    int combos = 1 << rank;
    for (int c = 0; c < combos; ++c) {
      double w = 1;
      int64_t off = 0;
      bool skip = false;
      for (size_t d = 0; d < rank && !skip; ++d) {
        const ResizeTap& t = plan[d][static_cast<size_t>(o[d])];
        bool second = (c >> d) & 1;
        double wd = second ? t.w1 : t.w0;
        if (wd == 0) skip = true;
        w *= wd;
        off += (second ? t.i1 : t.i0) * in_strides[d];
      }
      if (!skip) fn(p, off, w);
    }
    for (size_t d = rank; d-- > 0;) {
      if (++o[d] < out[d]) break;
      o[d] = 0;
    }
  }
}

}  // namespace ort_train
