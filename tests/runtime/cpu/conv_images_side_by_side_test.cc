// The CPU Conv and ConvGrad kernels' images side by side in one GEMM
// (runtime/cpu/kernels/conv.cc, conv_grad.cc; runtime/cpu/im2col.h).
#include <algorithm>

#include "test_util.h"

namespace ort_train::testing {

// Images with few positions sit side by side in one GEMM (runtime/cpu/im2col.h):
// Conv and ConvGrad over three images equal each image's own run, bit for bit
// (a GEMM never splits K, so folding changes no sum's order but dW's over images).
TEST_CASE("conv: images side by side in one GEMM give each image's own outputs", "[conv]") {
  const std::vector<Attribute> attrs = {Attribute::make_int("group", 2), Attribute::make_ints("strides", {2, 1}),
                                        Attribute::make_ints("pads", {1, 1, 1, 1})};
  Tensor x = random_tensor({3, 4, 4, 3}, 21), w = random_tensor({6, 2, 3, 3}, 22);
  std::vector<Tensor> all = run_node({.op = "Conv", .inputs = {x, w}, .attributes = attrs});
  const int64_t per_image = all[0].numel() / 3, x_image = x.numel() / 3;
  for (int64_t n = 0; n < 3; ++n) {
    Tensor xn = Tensor::host(DType::kFloat, {1, 4, 4, 3});
    std::copy(x.data<float>() + n * x_image, x.data<float>() + (n + 1) * x_image, xn.data<float>());
    std::vector<Tensor> one = run_node({.op = "Conv", .inputs = {xn, w}, .attributes = attrs});
    INFO("image " << n);
    CHECK(std::equal(one[0].data<float>(), one[0].data<float>() + per_image, all[0].data<float>() + n * per_image));
  }
  // ConvGrad's dX per image likewise; dW is the sum of the images' own.
  Tensor dy = random_tensor(all[0].dims(), 23);
  std::vector<Tensor> grads = run_node(
      {.op = "ConvGrad", .inputs = {dy, x, w}, .attributes = attrs, .num_outputs = 2, .domain = kOrtTrainDomain});
  std::vector<double> dw_sum(static_cast<size_t>(w.numel()), 0.0);
  for (int64_t n = 0; n < 3; ++n) {
    Tensor xn = Tensor::host(DType::kFloat, {1, 4, 4, 3}), dyn = Tensor::host(DType::kFloat, {1, 6, 2, 3});
    std::copy(x.data<float>() + n * x_image, x.data<float>() + (n + 1) * x_image, xn.data<float>());
    std::copy(dy.data<float>() + n * per_image, dy.data<float>() + (n + 1) * per_image, dyn.data<float>());
    std::vector<Tensor> one = run_node(
        {.op = "ConvGrad", .inputs = {dyn, xn, w}, .attributes = attrs, .num_outputs = 2, .domain = kOrtTrainDomain});
    INFO("image " << n);
    CHECK(std::equal(one[0].data<float>(), one[0].data<float>() + x_image, grads[0].data<float>() + n * x_image));
    for (int64_t i = 0; i < w.numel(); ++i) dw_sum[static_cast<size_t>(i)] += one[1].data<float>()[i];
  }
  for (int64_t i = 0; i < w.numel(); ++i)
    CHECK(grads[1].data<float>()[i] == Approx(dw_sum[static_cast<size_t>(i)]).epsilon(1e-5).margin(1e-6));
}

}  // namespace ort_train::testing
