// The per-element arithmetic of the GPU optimizers and the GPU dropout mask,
// run on the host through the same functions the kernels call, against the
// CPU optimizers and the CPU Dropout kernel. Needs only a CUDA build.
#ifdef ORT_TRAIN_HAVE_CUDA
#include <cmath>

#include "cuda_kernels/dropout.h"
#include "cuda_kernels/elementwise.h"
#include "optimizers/cuda/cuda_optimizer.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

// Two parameters (the second in no_decay) updated `steps` times by the CPU
// optimizer and by the GPU's element functions; returns the worst relative
// difference of the parameters.
double compare_optimizer(OptimizerSettings s, int steps) {
  s.no_decay = {"b*"};
  std::vector<Tensor> cpu_w = {random_tensor({37}, 1), random_tensor({5, 3}, 2)};
  std::vector<Tensor> gpu_w = {cpu_w[0].clone(), cpu_w[1].clone()};
  std::vector<ParamSlot> slots = {{"w", cpu_w[0]}, {"b", cpu_w[1]}};
  auto opt = Optimizer::create(s, slots);
  INFO(opt.status().message());
  REQUIRE(opt.ok());
  std::vector<std::vector<float>> m(2), v(2);
  for (size_t p = 0; p < 2; ++p) {
    m[p].assign(static_cast<size_t>(gpu_w[p].numel()), 0.f);
    v[p].assign(static_cast<size_t>(gpu_w[p].numel()), 0.f);
  }
  for (int t = 1; t <= steps; ++t) {
    double lr = 0.01 * t;
    std::vector<Tensor> grads = {random_tensor({37}, 10 + t), random_tensor({5, 3}, 20 + t)};
    REQUIRE((*opt)->step(grads, lr).ok());
    if (s.name == "Lamb") {
      cuda::LambArgs a = cuda::lamb_args(s, t, lr);
      for (size_t p = 0; p < 2; ++p) {
        double wd = p == 0 ? s.weight_decay : 0.0;
        float* w = gpu_w[p].data<float>();
        std::vector<float> r(static_cast<size_t>(gpu_w[p].numel()));
        double ws = 0, rs = 0;
        for (size_t k = 0; k < r.size(); ++k) {
          double rk = cuda::lamb_direction(w[k], grads[p].data<float>()[k], m[p][k], v[p][k], wd, a);
          r[k] = static_cast<float>(rk);
          ws += static_cast<double>(w[k]) * w[k];
          rs += rk * rk;
        }
        float step = static_cast<float>(a.lr * cuda::lamb_ratio(ws, rs, a));
        for (size_t k = 0; k < r.size(); ++k) w[k] -= step * r[k];
      }
    } else {
      for (size_t p = 0; p < 2; ++p) {
        float wd = p == 0 ? static_cast<float>(s.weight_decay) : 0.f;
        float* w = gpu_w[p].data<float>();
        const float* g = grads[p].data<float>();
        if (s.name == "Sgd") {
          cuda::SgdArgs a = cuda::sgd_args(s, t, lr);
          for (size_t k = 0; k < m[p].size(); ++k) cuda::sgd_element(w[k], g[k], s.momentum != 0 ? &m[p][k] : nullptr, wd, a);
        } else {
          cuda::AdamArgs a = cuda::adam_args(s, t, lr);
          for (size_t k = 0; k < m[p].size(); ++k) cuda::adam_element(w[k], g[k], m[p][k], v[p][k], wd, a);
        }
      }
    }
  }
  double worst = 0;
  for (size_t p = 0; p < 2; ++p)
    for (int64_t k = 0; k < cpu_w[p].numel(); ++k) {
      double a = cpu_w[p].data<float>()[k], b = gpu_w[p].data<float>()[k];
      worst = std::max(worst, std::abs(a - b) / std::max(std::abs(a), 1e-6));
    }
  return worst;
}

OptimizerSettings settings(const std::string& name, double wd, double momentum = 0, bool hf = false) {
  OptimizerSettings s;
  s.name = name;
  s.weight_decay = wd;
  s.momentum = momentum;
  s.huggingface = hf;
  if (name == "Lamb") s.eps = 1e-6;
  return s;
}

}  // namespace

TEST_CASE("cuda_math.optimizer_elements_equal_the_cpu_optimizers") {
  // Same float operations in the same order: bit-identical on the host (the
  // GPU may contract a*b+c into one FMA, within rounding of these).
  CHECK(compare_optimizer(settings("Sgd", 0.01), 4) == 0.0);
  CHECK(compare_optimizer(settings("Sgd", 0.01, 0.9), 4) == 0.0);
  CHECK(compare_optimizer(settings("Adam", 0.01), 4) == 0.0);
  CHECK(compare_optimizer(settings("AdamW", 0.01), 4) == 0.0);
  CHECK(compare_optimizer(settings("AdamW", 0.01, 0, true), 4) == 0.0);
  // LAMB's per-tensor norms are summed in another order: within rounding.
  CHECK(compare_optimizer(settings("Lamb", 0.01), 4) <= 1e-6);
}

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
