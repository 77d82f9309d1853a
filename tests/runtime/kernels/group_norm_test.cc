// GroupNormalization's forward against the formula written out here (onnx
// 1.12 has no node test of it): each (n, group) normalized by its own mean and
// biased variance, then scale and bias per group (opset 18) or per channel (21).
#include <cmath>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

Tensor expected_group_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t groups, bool per_group,
                           double eps) {
  const int64_t n = x.dims()[0], c = x.dims()[1], s = x.dims()[2], cpg = c / groups;
  Tensor y = Tensor::host(DType::kDouble, x.dims());
  const double* px = x.data<double>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      double mean = 0, var = 0;
      for (int64_t k = 0; k < cpg * s; ++k) mean += px[(b * c + g * cpg) * s + k];
      mean /= static_cast<double>(cpg * s);
      for (int64_t k = 0; k < cpg * s; ++k) var += std::pow(px[(b * c + g * cpg) * s + k] - mean, 2);
      var /= static_cast<double>(cpg * s);
      for (int64_t ch = g * cpg; ch < (g + 1) * cpg; ++ch)
        for (int64_t k = 0; k < s; ++k) {
          int64_t a = per_group ? g : ch;
          y.data<double>()[(b * c + ch) * s + k] =
              (px[(b * c + ch) * s + k] - mean) / std::sqrt(var + eps) * scale.data<double>()[a] + bias.data<double>()[a];
        }
    }
  return y;
}

}  // namespace

TEST_CASE("GroupNormalization normalizes each group, with the affine of its opset", "[kernels][GroupNormalization]") {
  Tensor x = Tensor::host(DType::kDouble, {2, 6, 5});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<double>()[i] = std::sin(0.37 * static_cast<double>(i)) * (1 + i % 3);
  for (int64_t opset : {18, 21}) {
    const bool per_group = opset < 21;
    const int64_t a = per_group ? 3 : 6;
    Tensor scale = Tensor::host(DType::kDouble, {a}), bias = Tensor::host(DType::kDouble, {a});
    for (int64_t i = 0; i < a; ++i) {
      scale.data<double>()[i] = 0.5 + 0.25 * static_cast<double>(i);
      bias.data<double>()[i] = -0.1 * static_cast<double>(i);
    }
    NodeSpec spec{.op = "GroupNormalization", .inputs = {x, scale, bias},
                  .attributes = {Attribute::make_int("num_groups", 3), Attribute::make_float("epsilon", 1e-4f)},
                  .opset = opset};
    INFO("opset " << opset);
    require_close(run_node(spec)[0], expected_group_norm(x, scale, bias, 3, per_group, 1e-4f), 1e-12, 1e-12);
  }
}
