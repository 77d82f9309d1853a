// The CPU Conv and ConvGrad kernels run their GEMMs over the window's live
// taps only (runtime/cpu/im2col.h): a tap whose every position is padding
// adds nothing forward and gets a zero filter gradient.
#include "test_util.h"

namespace ort_train::testing {

// A 3x3 window padded by 1 over 1x1 images (ResNet's last stage at 32x32):
// only the centre tap reads the image, so the convolution is the 1x1
// convolution by the filter's centre, bit for bit (the same GEMMs).
TEST_CASE("conv: a window over the padding is the convolution by its live taps, and their gradient",
          "[conv][ConvGrad]") {
  const int64_t N = 5, C = 6, M = 4;
  Tensor x = random_tensor({N, C, 1, 1}, 31), w = random_tensor({M, C, 3, 3}, 32), dy = random_tensor({N, M, 1, 1}, 33);
  Tensor centre = Tensor::host(DType::kFloat, {M, C, 1, 1});
  for (int64_t i = 0; i < M * C; ++i) centre.data<float>()[i] = w.data<float>()[i * 9 + 4];
  const std::vector<Attribute> pads = {Attribute::make_ints("pads", {1, 1, 1, 1})};
  Tensor y = run_node({.op = "Conv", .inputs = {x, w}, .attributes = pads})[0];
  Tensor y1 = run_node({.op = "Conv", .inputs = {x, centre}})[0];
  REQUIRE(y.dims() == Dims{N, M, 1, 1});
  CHECK(y.to_double_vector() == y1.to_double_vector());

  std::vector<Tensor> g = run_node(
      {.op = "ConvGrad", .inputs = {dy, x, w}, .attributes = pads, .num_outputs = 2, .domain = kOrtTrainDomain});
  std::vector<Tensor> g1 =
      run_node({.op = "ConvGrad", .inputs = {dy, x, centre}, .num_outputs = 2, .domain = kOrtTrainDomain});
  CHECK(g[0].to_double_vector() == g1[0].to_double_vector());  // dX
  for (int64_t i = 0; i < M * C; ++i)
    for (int64_t t = 0; t < 9; ++t) {
      INFO("filter " << i << " tap " << t);
      CHECK(g[1].data<float>()[i * 9 + t] == (t == 4 ? g1[1].data<float>()[i] : 0.0f));
    }
}

// Every tap dead: a 1x1 window, padded by 2 and strided by 4, over a 1x1
// image has two positions along each dim, both in the padding.
TEST_CASE("conv: a window that never reads the image gives zeros and zero gradients", "[conv][ConvGrad]") {
  Tensor x = random_tensor({2, 3, 1, 1}, 41), w = random_tensor({2, 3, 1, 1}, 42);
  const std::vector<Attribute> attrs = {Attribute::make_ints("pads", {2, 2, 2, 2}),
                                        Attribute::make_ints("strides", {4, 4})};
  Tensor y = run_node({.op = "Conv", .inputs = {x, w, random_tensor({2}, 43)}, .attributes = attrs})[0];
  REQUIRE(y.dims() == Dims{2, 2, 2, 2});  // (1 + 4 - 1) / 4 + 1 = 2 positions, neither on the image
  Tensor y0 = run_node({.op = "Conv", .inputs = {x, w}, .attributes = attrs})[0];
  CHECK(y0.to_double_vector() == std::vector<double>(16, 0.0));
  std::vector<Tensor> g = run_node({.op = "ConvGrad", .inputs = {random_tensor(y.dims(), 44), x, w}, .attributes = attrs,
                                    .num_outputs = 2, .domain = kOrtTrainDomain});
  CHECK(g[0].to_double_vector() == std::vector<double>(6, 0.0));
  CHECK(g[1].to_double_vector() == std::vector<double>(6, 0.0));
}

}  // namespace ort_train::testing
