// oneDNN's own convolution as Conv's and ConvGrad's third candidate
// (runtime/cpu/onednn_conv.h): forced by a kept choice, it runs in oneDNN and
// agrees with the im2col + OpenBLAS kernels to float32 rounding (the measured
// choice's float32 gate) over 1-D, 2-D and 3-D convolutions with pads
// (asymmetric too), strides, dilations, groups (depthwise too), with and
// without a bias; ConvGrad's dX, dW and dB each, and a node that asks for
// only some of them.
#include "runtime/cpu/onednn_conv.h"
#include "runtime/kernel_choice.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

struct Case {
  const char* what;
  Dims x, w;
  std::vector<Attribute> attributes;
};

std::vector<Case> cases() {
  return {
      {"2-D, pads 1", {2, 3, 9, 9}, {4, 3, 3, 3}, {Attribute::make_ints("pads", {1, 1, 1, 1})}},
      {"2-D, stride 2, asymmetric pads",
       {3, 4, 10, 7},
       {8, 4, 3, 3},
       {Attribute::make_ints("strides", {2, 2}), Attribute::make_ints("pads", {0, 1, 2, 1})}},
      {"2-D, dilation 2, groups 2", {2, 4, 11, 11}, {6, 2, 3, 3},
       {Attribute::make_ints("dilations", {2, 2}), Attribute::make_int("group", 2)}},
      {"2-D depthwise", {2, 8, 8, 8}, {8, 1, 3, 3},
       {Attribute::make_int("group", 8), Attribute::make_ints("pads", {1, 1, 1, 1})}},
      {"2-D 1x1 (ResNet's shortcut), stride 2", {4, 16, 8, 8}, {32, 16, 1, 1}, {Attribute::make_ints("strides", {2, 2})}},
      {"1-D", {2, 3, 17}, {5, 3, 4}, {Attribute::make_ints("pads", {2, 1})}},
      {"3-D", {1, 2, 5, 6, 7}, {3, 2, 2, 3, 2}, {Attribute::make_ints("strides", {1, 2, 1})}},
  };
}

struct KeptChoice {
  KeptChoice(const std::string& op, const std::string& candidate) {
    KernelChoices::instance().clear();
    KernelChoices::instance().set_deterministic(false);
    KernelChoices::instance().keep(op, candidate);
  }
  ~KeptChoice() { KernelChoices::instance().clear(); }
};

// The node's outputs with `candidate` kept for its op, and how many
// convolutions oneDNN ran meanwhile.
std::pair<std::vector<Tensor>, int64_t> run_with(const NodeSpec& spec, const std::string& candidate) {
  KeptChoice kept((spec.domain.empty() ? "" : spec.domain + ".") + spec.op, candidate);
  const int64_t before = onednn_convolutions();
  std::vector<Tensor> out = run_node(spec);
  return {out, onednn_convolutions() - before};
}

}  // namespace

TEST_CASE("onednn_conv: Conv forward agrees with im2col + OpenBLAS", "[onednn_conv][gemm_backend]") {
  uint64_t seed = 1;
  for (const Case& c : cases())
    for (bool bias : {false, true}) {
      INFO(c.what << (bias ? ", bias" : ""));
      NodeSpec spec{"Conv", {random_tensor(c.x, seed++), random_tensor(c.w, seed++)}, c.attributes};
      if (bias) spec.inputs.push_back(random_tensor({c.w[0]}, seed++));
      auto [blas, blas_convs] = run_with(spec, "openblas");
      auto [dnnl, dnnl_convs] = run_with(spec, "onednn_conv");
      CHECK(blas_convs == 0);
      CHECK(dnnl_convs == 1);
      REQUIRE(dnnl[0].dims() == blas[0].dims());
      CHECK(relative_disagreement(dnnl[0], blas[0]) <= 1e-5);
    }
}

TEST_CASE("onednn_conv: ConvGrad's dX, dW and dB agree with im2col + OpenBLAS", "[onednn_conv][gemm_backend]") {
  uint64_t seed = 100;
  for (const Case& c : cases()) {
    INFO(c.what);
    NodeSpec forward{"Conv", {random_tensor(c.x, seed++), random_tensor(c.w, seed++)}, c.attributes};
    const Dims y = run_node(forward)[0].dims();
    NodeSpec spec{"ConvGrad", {random_tensor(y, seed++), forward.inputs[0], forward.inputs[1]}, c.attributes, 3};
    spec.domain = kOrtTrainDomain;
    auto [blas, blas_convs] = run_with(spec, "openblas");
    auto [dnnl, dnnl_convs] = run_with(spec, "onednn_conv");
    CHECK(blas_convs == 0);
    CHECK(dnnl_convs == 2);  // backward data, then backward weights (dW with dB)
    for (size_t k = 0; k < 3; ++k) {
      INFO("output " << k);
      REQUIRE(dnnl[k].dims() == blas[k].dims());
      CHECK(relative_disagreement(dnnl[k], blas[k]) <= 1e-5);
    }
  }
}

TEST_CASE("onednn_conv: a ConvGrad asking for dW alone computes only that", "[onednn_conv][gemm_backend]") {
  const Case c = cases()[1];
  NodeSpec forward{"Conv", {random_tensor(c.x, 7), random_tensor(c.w, 8)}, c.attributes};
  const Dims y = run_node(forward)[0].dims();
  // dX and dB left out: the node's outputs are "", dW, "".
  const std::vector<Tensor> inputs = {random_tensor(y, 9), forward.inputs[0], forward.inputs[1]};
  Model m = single_node_model({"ConvGrad", inputs, c.attributes, 3, 17, {}, kOrtTrainDomain});
  Node& node = m.graph.nodes[0];
  node.outputs = {"", node.outputs[1], ""};
  const std::string dw = node.outputs[1];
  std::erase_if(m.graph.outputs, [&](const ValueInfo& v) { return v.name != dw; });
  std::vector<Tensor> results;
  for (const std::string candidate : {"openblas", "onednn_conv"}) {
    KeptChoice kept(std::string(kOrtTrainDomain) + ".ConvGrad", candidate);
    const int64_t before = onednn_convolutions();
    Model copy = m;
    REQUIRE(infer_shapes(copy).ok());
    auto ex = Executor::create(copy);
    REQUIRE(ex.ok());
    auto out = (*ex)->run({{"in0", inputs[0]}, {"in1", inputs[1]}, {"in2", inputs[2]}});
    INFO(out.status().message());
    REQUIRE(out.ok());
    results.push_back(out->at(dw));
    CHECK(onednn_convolutions() - before == (candidate == "onednn_conv" ? 1 : 0));  // backward weights only
  }
  CHECK(relative_disagreement(results[1], results[0]) <= 1e-5);
}

}  // namespace ort_train::testing
