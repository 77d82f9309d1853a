#include "graph/ops/window_geometry.h"

namespace ort_train {

Result<std::vector<WindowDim>> window_geometry(const Node& node, const std::vector<int64_t>& spatial_in,
                                               const std::vector<int64_t>& kernel, bool allow_ceil_mode) {
  size_t n = spatial_in.size();
  if (kernel.size() != n)
    return shape_error("{}: kernel has {} spatial dims but the input has {}", node.describe(), kernel.size(), n);
  std::vector<int64_t> strides = node.attr_ints("strides"), dil = node.attr_ints("dilations"), pads = node.attr_ints("pads");
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  bool ceil_mode = allow_ceil_mode && node.attr_int("ceil_mode", 0) != 0;
  if (!strides.empty() && strides.size() != n) return shape_error("{}: strides must have {} values", node.describe(), n);
  if (!dil.empty() && dil.size() != n) return shape_error("{}: dilations must have {} values", node.describe(), n);
  if (!pads.empty() && pads.size() != 2 * n) return shape_error("{}: pads must have {} values", node.describe(), 2 * n);
  std::vector<WindowDim> out(n);
  for (size_t i = 0; i < n; ++i) {
    WindowDim& w = out[i];
    w.in = spatial_in[i];
    w.kernel = kernel[i];
    w.stride = strides.empty() ? 1 : strides[i];
    w.dilation = dil.empty() ? 1 : dil[i];
    if (w.stride <= 0 || w.dilation <= 0 || w.kernel <= 0)
      return shape_error("{}: kernel, strides and dilations must be positive", node.describe());
    int64_t span = w.dilation * (w.kernel - 1) + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out = (w.in + w.stride - 1) / w.stride;
      int64_t total = std::max<int64_t>(0, (w.out - 1) * w.stride + span - w.in);
      w.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end = total - w.pad_begin;
      continue;
    }
    if (auto_pad == "VALID") {
      w.pad_begin = w.pad_end = 0;
    } else if (auto_pad == "NOTSET") {
      w.pad_begin = pads.empty() ? 0 : pads[i];
      w.pad_end = pads.empty() ? 0 : pads[i + n];
    } else {
      return invalid_argument("{}: unknown auto_pad '{}'", node.describe(), auto_pad);
    }
    int64_t avail = w.in + w.pad_begin + w.pad_end - span;
    if (avail < 0)
      return shape_error("{}: window of {} does not fit the padded input of {}", node.describe(), span,
                         w.in + w.pad_begin + w.pad_end);
    w.out = (ceil_mode ? (avail + w.stride - 1) / w.stride : avail / w.stride) + 1;
    // A window may not start in the end padding.
    if (ceil_mode && (w.out - 1) * w.stride >= w.in + w.pad_begin) --w.out;
  }
  return out;
}

Result<int64_t> conv_group(const Node& node) {
  const int64_t group = node.attr_int("group", 1);
  if (group < 1) return invalid_argument("{}: group must be 1 or more, not {}", node.describe(), group);
  return group;
}

}  // namespace ort_train
