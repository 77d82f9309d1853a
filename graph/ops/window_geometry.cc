#include "graph/ops/window_geometry.h"

#include <cstdint>

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
    if (w.stride <= 0 || w.dilation <= 0 || w.kernel <= 0 || w.in < 0)
      return shape_error("{}: kernel, strides and dilations must be positive", node.describe());
    // Sizes from a file may be near 2^63: the window arithmetic is checked in
    // 128 bits, and a result past int64 is refused.
    const __int128 span_wide = static_cast<__int128>(w.dilation) * (w.kernel - 1) + 1;
    if (span_wide > INT64_MAX) return shape_error("{}: window of dim {} is out of range", node.describe(), i);
    int64_t span = static_cast<int64_t>(span_wide);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out = static_cast<int64_t>((static_cast<__int128>(w.in) + w.stride - 1) / w.stride);
      const __int128 need = static_cast<__int128>(w.out - 1) * w.stride + span - w.in;
      int64_t total = need < 0 ? 0 : need > INT64_MAX ? INT64_MAX : static_cast<int64_t>(need);
      w.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end = total - w.pad_begin;
      continue;
    }
    if (auto_pad == "VALID") {
      w.pad_begin = w.pad_end = 0;
    } else if (auto_pad == "NOTSET") {
      w.pad_begin = pads.empty() ? 0 : pads[i];
      w.pad_end = pads.empty() ? 0 : pads[i + n];
      if (w.pad_begin < 0 || w.pad_end < 0) return shape_error("{}: pads must not be negative", node.describe());
    } else {
      return invalid_argument("{}: unknown auto_pad '{}'", node.describe(), auto_pad);
    }
    const __int128 padded = static_cast<__int128>(w.in) + w.pad_begin + w.pad_end, avail = padded - span;
    if (avail < 0)
      return shape_error("{}: window of {} does not fit the padded input of {}", node.describe(), span,
                         static_cast<int64_t>(padded));
    if (padded > INT64_MAX) return shape_error("{}: padded input of dim {} is out of range", node.describe(), i);
    w.out = static_cast<int64_t>((ceil_mode ? (avail + w.stride - 1) / w.stride : avail / w.stride) + 1);
    // A window may not start in the end padding.
    if (ceil_mode && static_cast<__int128>(w.out - 1) * w.stride >= static_cast<__int128>(w.in) + w.pad_begin) --w.out;
  }
  return out;
}

Result<int64_t> conv_group(const Node& node) {
  const int64_t group = node.attr_int("group", 1);
  if (group < 1) return invalid_argument("{}: group must be 1 or more, not {}", node.describe(), group);
  return group;
}

}  // namespace ort_train
