// The optimizers' arithmetic is one source (numerics/optimizer_math.h): the
// CPU optimizers' chunked, vectorized loops equal the element functions the
// GPU kernels run, applied one element at a time; the gradient factor
// (grad_scale) is the pre-scaled gradient's update within one rounding, and
// exactly it at 1; and no optimizer file computes an update of its own.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "numerics/optimizer_math.h"
#include "optimizers/optimizer_coefficients.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

// Two parameters (the second in no_decay) updated `steps` times by the CPU
// optimizer and by the element functions; the worst relative difference.
double compare_with_elements(OptimizerSettings s, int steps, float grad_scale) {
  s.no_decay = {"b*"};
  std::vector<Tensor> cpu_w = {random_tensor({70000}, 1), random_tensor({5, 3}, 2)};  // past one chunk
  std::vector<Tensor> el_w = {cpu_w[0].clone(), cpu_w[1].clone()};
  std::vector<ParamSlot> slots = {{"w", cpu_w[0]}, {"b", cpu_w[1]}};
  auto opt = Optimizer::create(s, slots);
  INFO(opt.status().message());
  REQUIRE(opt.ok());
  std::vector<std::vector<float>> m(2), v(2);
  for (size_t p = 0; p < 2; ++p) {
    m[p].assign(static_cast<size_t>(el_w[p].numel()), 0.f);
    v[p].assign(static_cast<size_t>(el_w[p].numel()), 0.f);
  }
  for (int t = 1; t <= steps; ++t) {
    double lr = 0.01 * t;
    std::vector<Tensor> grads = {random_tensor({70000}, 10 + t), random_tensor({5, 3}, 20 + t)};
    REQUIRE((*opt)->step(grads, lr, grad_scale).ok());
    for (size_t p = 0; p < 2; ++p) {
      float* w = el_w[p].data<float>();
      const float* g = grads[p].data<float>();
      const size_t n = m[p].size();
      const float wd = p == 0 ? static_cast<float>(s.weight_decay) : 0.f;
      if (s.name == "Lamb") {
        const LambStep c = lamb_step(s, t, lr, grad_scale);
        std::vector<float> r(n);
        double ws = 0, rs = 0;
        for (size_t k = 0; k < n; ++k) {
          double rk = lamb_direction(w[k], g[k], m[p][k], v[p][k], wd, c);
          r[k] = static_cast<float>(rk);
          ws += static_cast<double>(w[k]) * w[k];
          rs += rk * rk;
        }
        const float step = static_cast<float>(c.lr * lamb_ratio(ws, rs, c));
        for (size_t k = 0; k < n; ++k) w[k] -= step * r[k];
      } else if (s.name == "Sgd") {
        const SgdStep c = sgd_step(s, t, lr, grad_scale);
        for (size_t k = 0; k < n; ++k) sgd_element(w[k], g[k], s.momentum != 0 ? &m[p][k] : nullptr, wd, c);
      } else {
        const AdamStep c = adam_step(s, t, lr, grad_scale);
        for (size_t k = 0; k < n; ++k) {
          if (c.huggingface) adam_huggingface_element(w[k], g[k], m[p][k], v[p][k], wd, c);
          else adam_element(w[k], g[k], m[p][k], v[p][k], c, adam_decay(c, wd));
        }
      }
    }
  }
  double worst = 0;
  for (size_t p = 0; p < 2; ++p)
    for (int64_t k = 0; k < cpu_w[p].numel(); ++k) {
      double a = cpu_w[p].data<float>()[k], b = el_w[p].data<float>()[k];
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

std::string read(const std::string& path) {
  std::ifstream in(std::filesystem::path(source_dir()) / path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("optimizer_math.the_cpu_optimizers_are_the_element_functions") {
  for (float scale : {1.f, 0.37f}) {
    INFO("grad_scale " << scale);
    // Same float operations in the same order: bit-identical.
    CHECK(compare_with_elements(settings("Sgd", 0.01), 4, scale) == 0.0);
    CHECK(compare_with_elements(settings("Sgd", 0.01, 0.9), 4, scale) == 0.0);
    CHECK(compare_with_elements(settings("Adam", 0.01), 4, scale) == 0.0);
    CHECK(compare_with_elements(settings("AdamW", 0.01), 4, scale) == 0.0);
    CHECK(compare_with_elements(settings("AdamW", 0.01, 0, true), 4, scale) == 0.0);
    // LAMB's per-tensor norms are summed per chunk on the CPU: within rounding.
    CHECK(compare_with_elements(settings("Lamb", 0.01), 4, scale) <= 1e-6);
  }
}

TEST_CASE("optimizer_math.a_gradient_factor_is_a_prescaled_gradient") {
  const AdamStep c = adam_step(settings("AdamW", 0.01), 3, 1e-3, 0.25f);
  AdamStep unscaled = c;
  unscaled.grad_scale = 1.f;
  float w1 = 0.5f, m1 = 0.1f, v1 = 0.01f, w2 = w1, m2 = m1, v2 = v1;
  adam_element(w1, 0.8f, m1, v1, c, adam_decay(c, 0.01f));
  adam_element(w2, 0.2f, m2, v2, unscaled, adam_decay(unscaled, 0.01f));  // 0.8 * 0.25 is exact
  CHECK(w1 == w2);
  CHECK(m1 == m2);
  CHECK(v1 == v2);
  // At 1 the product is exact for every gradient, inf and NaN included.
  SgdStep s = sgd_step(settings("Sgd", 0), 1, 0.1, 1.f);
  float w = 1.f;
  sgd_element(w, std::numeric_limits<float>::infinity(), nullptr, 0.f, s);
  CHECK(std::isinf(w));
}

TEST_CASE("optimizer_math.no_optimizer_file_writes_its_own_arithmetic") {
  // The update's arithmetic (a square root of the second moment, the moment
  // updates) lives in numerics/optimizer_math.h alone; the CPU and GPU
  // optimizers include it and call it.
  for (const char* file : {"optimizers/optimizer.cc", "cuda_kernels/optimizers.cu", "cuda_kernels/optimizers.h",
                           "optimizers/cuda/cuda_optimizer.cc"}) {
    INFO(file);
    const std::string text = read(file);
    REQUIRE_FALSE(text.empty());
    CHECK(text.find("sqrt") == std::string::npos);
    CHECK(text.find("b1 *") == std::string::npos);
  }
  CHECK(read("optimizers/optimizer_coefficients.h").find("#include \"numerics/optimizer_math.h\"") != std::string::npos);
  CHECK(read("cuda_kernels/optimizers.h").find("#include \"numerics/optimizer_math.h\"") != std::string::npos);
  CHECK(read("optimizers/optimizer.cc").find("#include \"optimizers/optimizer_coefficients.h\"") != std::string::npos);
  CHECK(read("optimizers/cuda/cuda_optimizer.cc").find("#include \"optimizers/optimizer_coefficients.h\"") !=
        std::string::npos);
}

}  // namespace ort_train::testing
