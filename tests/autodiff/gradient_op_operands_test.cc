// Issue 33: a saved training graph is a file like any other, and its
// com.ort_train gradient ops can pair any operands. Each case below once
// reached a read past a buffer (an operand of another dtype read as the
// first's, a table indexed by another's sizes, a dim past the rank); each is
// now a shape error naming the node before the kernel runs.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

NodeSpec grad_op(const std::string& op, std::vector<Tensor> inputs, std::vector<Attribute> attrs = {},
                 std::vector<size_t> constants = {}) {
  return NodeSpec{.op = op, .inputs = std::move(inputs), .attributes = std::move(attrs),
                  .constant_inputs = std::move(constants), .domain = kOrtTrainDomain};
}

Tensor doubles(Dims d) { return Tensor::host(DType::kDouble, std::move(d)); }
Tensor floats(Dims d) {
  Tensor t = Tensor::host(DType::kFloat, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.25f;
  return t;
}

void refused(const NodeSpec& spec, const std::string& says) {
  Status st = run_node_error(spec);
  INFO(st.message());
  CHECK(st.code() == ErrorCode::kShape);
  CHECK(st.message().find(says) != std::string::npos);
}

}  // namespace

TEST_CASE("Gradient ops refuse operands of another dtype than the ones they read them as", "[autodiff][operands]") {
  refused(grad_op("SoftmaxGrad", {floats({2, 3}), doubles({2, 3})}), "SoftmaxGrad");
  refused(grad_op("LpNormalizationGrad", {floats({2, 3}), doubles({2, 3})}), "LpNormalizationGrad");
  refused(grad_op("DropoutGrad", {floats({4}), floats({4})}), "the mask must be bool");
  refused(grad_op("MaxPoolGrad", {floats({1, 1, 2, 2}), make<int32_t>({1, 1, 2, 2}, {0, 1, 2, 3}),
                                  make<int64_t>({4}, {1, 1, 4, 4})},
                  {Attribute::make_ints("kernel_shape", {2, 2}), Attribute::make_ints("strides", {2, 2})}, {2}),
          "Indices must be int64");
  refused(grad_op("ConvGrad", {floats({1, 2, 2, 2}), doubles({1, 1, 3, 3}), floats({2, 1, 2, 2})}), "ConvGrad");
}

TEST_CASE("Gradient ops refuse tables sized for other operands", "[autodiff][operands]") {
  // Scores [N=2, C=3]: one label per row, one weight per class, one dLoss (mean).
  Tensor scores = floats({2, 3});
  refused(grad_op("SoftmaxCrossEntropyLossGrad", {floats({}), scores, make<int64_t>({1}, {0})}),
          "the labels (one per score row) must hold 2 elements");
  refused(grad_op("SoftmaxCrossEntropyLossGrad",
                  {floats({}), scores, make<int64_t>({2}, {0, 2}), make<float>({2}, {1, 1})}),
          "the class weights (one per class) must hold 3 elements");
  refused(grad_op("NegativeLogLikelihoodLossGrad", {floats({}), floats({6}), make<int64_t>({6}, {0, 1, 2, 0, 1, 2})}),
          "must be [N, C, d...]");
  refused(grad_op("SoftmaxCrossEntropyLossGrad", {floats({5}), scores, make<int64_t>({2}, {0, 1})},
                  {Attribute::make_string("reduction", "none")}),
          "dLoss must hold 2 elements");
  // dY of a convolution of another size than X and W make.
  refused(grad_op("ConvGrad", {floats({1, 2, 3, 3}), floats({1, 1, 3, 3}), floats({2, 1, 2, 2})}),
          "are not one convolution's");
}

TEST_CASE("Gradient ops refuse dims past the rank", "[autodiff][operands]") {
  refused(grad_op("GatherGrad", {floats({2}), make<int64_t>({1}, {4}), make<int64_t>({2}, {0, 1})},
                  {Attribute::make_int("axis", 3)}, {1}),
          "GatherGrad");
  refused(grad_op("ResizeGrad", {floats({1, 1, 4, 4}), make<int64_t>({4}, {1, 1, 2, 2}), make<float>({2}, {2, 2})},
                  {Attribute::make_string("mode", "nearest")}, {1}),
          "2 scales for 4 resized dims");
  refused(grad_op("AveragePoolGrad", {floats({4}), make<int64_t>({1}, {4})},
                  {Attribute::make_ints("kernel_shape", {2})}, {1}),
          "must be [N, C, spatial...]");
}

TEST_CASE("A label out of range reads no class weight in the mean's denominator", "[autodiff][operands]") {
  // (The forward refuses such a label; the gradient op alone zeroes its row.)
  auto out = run_node(grad_op("SoftmaxCrossEntropyLossGrad",
                              {make<float>({}, {1}), make<float>({2, 3}, {0, 0, 0, 0, 0, 0}),
                               make<int64_t>({2}, {1, 1000000}), make<float>({3}, {1, 2, 3})}));
  // Row 0: (exp(0) - [c == 1]) * w(1) / w(1) = 1, 0, 1; row 1: zeros.
  require_close(out[0], make<float>({2, 3}, {1, 0, 1, 0, 0, 0}));
}
