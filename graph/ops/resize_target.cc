#include "graph/ops/resize_target.h"

#include <algorithm>
#include <cmath>

namespace ort_train {

Result<std::vector<size_t>> resize_axes(const Node& node, size_t rank) {
  std::vector<int64_t> given = node.attr_ints("axes");
  std::vector<size_t> axes;
  if (given.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(d);
    return axes;
  }
  const auto r = static_cast<int64_t>(rank);
  for (int64_t a : given) {
    if (a < -r || a >= r) return shape_error("{}: axis {} is outside rank {}", node.describe(), a, rank);
    size_t d = static_cast<size_t>(a < 0 ? a + r : a);
    if (std::find(axes.begin(), axes.end(), d) != axes.end())
      return shape_error("{}: axis {} is named twice", node.describe(), a);
    axes.push_back(d);
  }
  return axes;
}

namespace {

// A size computed from a double, refused past int64 (a file's scale may be huge).
Result<int64_t> checked_size(const Node& node, double size, size_t d) {
  if (!(size >= 0 && size < 9.2e18))
    return shape_error("{}: dim {} would have size {}, which is no valid size", node.describe(), d, size);
  return static_cast<int64_t>(size);
}

}  // namespace

Result<ResizeTarget> resize_target(const Node& node, const std::vector<int64_t>& in, const Tensor* scales,
                                   const Tensor* sizes) {
  ASSIGN_OR_RETURN(std::vector<size_t> axes, resize_axes(node, in.size()));
  const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return invalid_argument("{}: keep_aspect_ratio_policy '{}' is not stretch, not_larger or not_smaller",
                            node.describe(), policy);
  ResizeTarget t{std::vector<double>(in.size(), 1.0), in};
  if (sizes && sizes->numel() > 0) {
    std::vector<int64_t> s = sizes->to_int64_vector();
    if (s.size() != axes.size())
      return shape_error("{}: {} sizes for {} resized dims", node.describe(), s.size(), axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      if (s[i] < 0) return shape_error("{}: size {} is negative", node.describe(), s[i]);
      t.sizes[axes[i]] = s[i];
      if (in[axes[i]] > 0) t.scales[axes[i]] = static_cast<double>(s[i]) / static_cast<double>(in[axes[i]]);
    }
    if (policy == "stretch") return t;
    double scale = policy == "not_larger" ? INFINITY : -INFINITY;
    for (size_t d : axes) {
      if (in[d] < 0) {  // the common scale needs every named dim's size
        for (size_t a : axes) t.sizes[a] = -1;
        return t;
      }
      scale = policy == "not_larger" ? std::min(scale, t.scales[d]) : std::max(scale, t.scales[d]);
    }
    for (size_t d : axes) {
      t.scales[d] = scale;
      ASSIGN_OR_RETURN(t.sizes[d], checked_size(node, std::floor(scale * static_cast<double>(in[d]) + 0.5), d));
    }
    return t;
  }
  if (!scales || scales->numel() == 0) return invalid_argument("{}: neither scales nor sizes is given", node.describe());
  if (scales->dtype() != DType::kFloat && scales->dtype() != DType::kDouble)
    return invalid_argument("{}: scales are {}, not float", node.describe(), dtype_name(scales->dtype()));
  if (static_cast<size_t>(scales->numel()) != axes.size())
    return shape_error("{}: {} scales for {} resized dims", node.describe(), scales->numel(), axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    double sc = scales->dtype() == DType::kDouble ? scales->data<double>()[i] : scales->data<float>()[i];
    if (!(sc >= 0)) return shape_error("{}: scale {} gives no valid output size", node.describe(), sc);
    t.scales[axes[i]] = sc;
    if (in[axes[i]] >= 0) {
      ASSIGN_OR_RETURN(t.sizes[axes[i]], checked_size(node, std::floor(static_cast<double>(in[axes[i]]) * sc), axes[i]));
    }
  }
  return t;
}

}  // namespace ort_train
