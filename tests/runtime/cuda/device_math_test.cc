// The per-element arithmetic of the GPU dropout mask and elementwise kernels,
// run on the host through the same functions the kernels call, against the
// CPU kernels. Needs only a CUDA build. (The optimizers' arithmetic is one
// source for both devices: tests/optimizers/optimizer_math_test.cc.)
#ifdef ORT_TRAIN_HAVE_CUDA
#include <cmath>

#include "cuda_kernels/dropout.h"
#include "cuda_kernels/elementwise.h"
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("cuda_math.dropout_masks_equal_the_cpu_kernel") {
  NodeSpec spec{"Dropout", {random_tensor({257}, 3), make<float>({}, {0.3f}), make<bool>({}, {true})}, {}, 2, 13, {1, 2}};
  spec.run_options.training = true;
  spec.run_options.seed = 7;
  spec.run_options.step = 2;
  Model model = single_node_model(spec);
  auto ex = Executor::create(model);
  REQUIRE(ex.ok());
  std::map<std::string, Tensor> feeds = {{"in0", spec.inputs[0]}};
  auto out = (*ex)->run(feeds, spec.run_options);
  REQUIRE(out.ok());
  const Tensor& mask = out->at("out1");
  // The seed the CPU kernel drew from: recomputed as the kernel does (dropout_seed),
  // then every element's keep decision through the GPU's function.
  InferContext shapes(model.graph.nodes[0], 13, {});
  KernelContext probe(model.graph.nodes[0], 13, {}, shapes, (*ex)->allocator(), spec.run_options, 0);
  uint64_t seed = probe.random_seed();
  int dropped = 0;
  for (int64_t i = 0; i < mask.numel(); ++i) {
    bool keep = counter_uniform(seed, static_cast<uint64_t>(i)) >= 0.3f;
    CHECK(keep == mask.data<bool>()[i]);
    dropped += !keep;
  }
  CHECK(dropped > 40);  // about 30% of 257
  CHECK(dropped < 120);
}

TEST_CASE("cuda_math.unary_ops_and_activation_gradients_equal_the_cpu_kernels") {
  using cuda::ActivationGrad;
  using cuda::UnaryOp;
  // Inputs away from 0 (Relu, Abs, Sign kinks) and in each function's domain.
  Tensor x = random_tensor({301}, 5, 0.05f, 3.f);
  for (int64_t i = 0; i < x.numel(); i += 2) x.data<float>()[i] = -x.data<float>()[i];
  Tensor pos = random_tensor({301}, 6, 0.05f, 3.f);
  struct Case {
    const char* op;
    UnaryOp u;
    bool positive_only;
    std::vector<Attribute> attrs;
  };
  std::vector<Case> cases = {
      {"Neg", UnaryOp::kNeg, false, {}},         {"Abs", UnaryOp::kAbs, false, {}},
      {"Relu", UnaryOp::kRelu, false, {}},       {"Sign", UnaryOp::kSign, false, {}},
      {"Exp", UnaryOp::kExp, false, {}},         {"Log", UnaryOp::kLog, true, {}},
      {"Sqrt", UnaryOp::kSqrt, true, {}},        {"Reciprocal", UnaryOp::kReciprocal, false, {}},
      {"Sigmoid", UnaryOp::kSigmoid, false, {}}, {"Tanh", UnaryOp::kTanh, false, {}},
      {"Erf", UnaryOp::kErf, false, {}},         {"Softplus", UnaryOp::kSoftplus, false, {}},
      {"Sin", UnaryOp::kSin, false, {}},         {"Cos", UnaryOp::kCos, false, {}},
      {"Atan", UnaryOp::kAtan, false, {}},       {"Floor", UnaryOp::kFloor, false, {}},
      {"Ceil", UnaryOp::kCeil, false, {}},       {"Round", UnaryOp::kRound, false, {}},
      {"LeakyRelu", UnaryOp::kLeakyRelu, false, {Attribute::make_float("alpha", 0.2f)}},
  };
  for (const Case& c : cases) {
    INFO("op " << c.op);
    const Tensor& in = c.positive_only ? pos : x;
    Tensor want = run_node({c.op, {in}, c.attrs})[0];
    Tensor got = Tensor::host(DType::kFloat, in.dims());
    for (int64_t i = 0; i < in.numel(); ++i)
      got.data<float>()[i] = cuda::unary_value<float>(c.u, in.data<float>()[i], 0.2f);
    require_close(got, want, 2e-6, 1e-6);
  }
  for (const char* approx : {"none", "tanh"}) {
    INFO("Gelu approximate=" << approx);
    Tensor want = run_node({"Gelu", {x}, {Attribute::make_string("approximate", approx)}, 1, 20})[0];
    Tensor got = Tensor::host(DType::kFloat, x.dims());
    UnaryOp u = std::string(approx) == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
    for (int64_t i = 0; i < x.numel(); ++i) got.data<float>()[i] = cuda::unary_value<float>(u, x.data<float>()[i], 0);
    require_close(got, want, 2e-6, 1e-6);
  }
  {
    INFO("Silu (com.ort_train)");
    NodeSpec spec{"Silu", {x}, {}};
    spec.domain = kOrtTrainDomain;
    Tensor want = run_node(spec)[0];
    Tensor got = Tensor::host(DType::kFloat, x.dims());
    for (int64_t i = 0; i < x.numel(); ++i)
      got.data<float>()[i] = cuda::unary_value<float>(UnaryOp::kSilu, x.data<float>()[i], 0);
    require_close(got, want, 2e-6, 1e-6);
  }
  // Gradient ops: dY and the saved Y (Relu, Sigmoid, Tanh) or X (Gelu, LeakyRelu).
  Tensor dy = random_tensor({301}, 7);
  Tensor y01 = random_tensor({301}, 8, 0.05f, 0.95f);
  struct GradCase {
    const char* op;
    ActivationGrad g;
    const Tensor* saved;
    std::vector<Attribute> attrs;
  };
  std::vector<GradCase> grads = {
      {"ReluGrad", ActivationGrad::kRelu, &x, {}},
      {"SigmoidGrad", ActivationGrad::kSigmoid, &y01, {}},
      {"TanhGrad", ActivationGrad::kTanh, &y01, {}},
      {"LeakyReluGrad", ActivationGrad::kLeakyRelu, &x, {Attribute::make_float("alpha", 0.2f)}},
      {"GeluGrad", ActivationGrad::kGelu, &x, {}},
      {"GeluGrad", ActivationGrad::kGeluTanh, &x, {Attribute::make_string("approximate", "tanh")}},
      {"SiluGrad", ActivationGrad::kSilu, &x, {}},
  };
  for (const GradCase& c : grads) {
    INFO("op " << c.op);
    NodeSpec spec{c.op, {dy, *c.saved}, c.attrs};
    spec.domain = kOrtTrainDomain;
    Tensor want = run_node(spec)[0];
    Tensor got = Tensor::host(DType::kFloat, dy.dims());
    for (int64_t i = 0; i < dy.numel(); ++i)
      got.data<float>()[i] = cuda::activation_grad_value<float>(c.g, dy.data<float>()[i], c.saved->data<float>()[i], 0.2f);
    require_close(got, want, 2e-6, 1e-6);
  }
}

}  // namespace ort_train::testing
#endif  // ORT_TRAIN_HAVE_CUDA
