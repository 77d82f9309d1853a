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
// `roi` (may be null) is read for tf_crop_and_resize only: [starts, ends] of
// the dims `axes` names.
inline Status resize_plan(const Node& node, int64_t opset, const Dims& in, const Dims& out, const Tensor* scales,
                          const Tensor* sizes, const Tensor* roi, std::vector<std::vector<ResizeTap>>& plan) {
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
  std::vector<double> roi_start(in.size(), 0.0), roi_end(in.size(), 1.0);
  if (opset >= 11 && node.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
    ASSIGN_OR_RETURN(std::vector<size_t> axes, resize_axes(node, in.size()));
    if (!roi || roi->numel() != static_cast<int64_t>(2 * axes.size()) ||
        (roi->dtype() != DType::kFloat && roi->dtype() != DType::kDouble))
      return invalid_argument("{}: tf_crop_and_resize needs a float roi of {} values (starts, then ends)",
                              node.describe(), 2 * axes.size());
    for (size_t k = 0; k < axes.size(); ++k) {
      auto at = [&](size_t i) {
        return roi->dtype() == DType::kFloat ? static_cast<double>(roi->data<float>()[i]) : roi->data<double>()[i];
      };
      roi_start[axes[k]] = at(k);
      roi_end[axes[k]] = at(k + axes.size());
    }
  }
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 0)
      return shape_error("{}: dim {} of the input is empty but the output's is {}", node.describe(), d, out[d]);
    plan[d] = resize_taps(node, opset, in[d], out[d], scale[d], roi_start[d], roi_end[d]);
  }
  return Status::Ok();
}

// Calls fn(out_index, in_index, weight) for every tap of every output
// element with a nonzero weight, and outside(out_index) for an element that
// lies outside the input along some dim (tf_crop_and_resize).
template <typename F, typename G>
void for_each_resize_tap(const Dims& in, const Dims& out, const std::vector<std::vector<ResizeTap>>& plan, F&& fn,
                         G&& outside) {
  const size_t rank = in.size();
  std::vector<int64_t> o(rank, 0), in_strides(rank, 1), k(rank, 0);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
  int64_t total = 1;
  for (int64_t v : out) total *= v;
  std::vector<const ResizeTap*> taps(rank);
  for (int64_t p = 0; p < total; ++p) {
    bool away = false;
    for (size_t d = 0; d < rank; ++d) {
      taps[d] = &plan[d][static_cast<size_t>(o[d])];
      away = away || taps[d]->outside;
    }
    if (away) {
      outside(p);
    } else {
      // Every combination of one tap per dim, as a mixed-radix counter.
      std::fill(k.begin(), k.end(), 0);
      while (true) {
        double w = 1;
        int64_t off = 0;
        for (size_t d = 0; d < rank && w != 0; ++d) {
          w *= taps[d]->weight[static_cast<size_t>(k[d])];
          off += taps[d]->index[static_cast<size_t>(k[d])] * in_strides[d];
        }
        if (w != 0) fn(p, off, w);
        size_t d = rank;
        while (d-- > 0) {
          if (++k[d] < static_cast<int64_t>(taps[d]->index.size())) break;
          k[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;
      }
    }
    for (size_t d = rank; d-- > 0;) {
      if (++o[d] < out[d]) break;
      o[d] = 0;
    }
  }
}

}  // namespace ort_train
