// runtime/cpu/vector_math.h against double-precision references: a few ulp
// over the ranges the kernels see, the same value for an element wherever it
// sits in the array (so thread chunks cannot change results), and the GELU
// pair's derivative agreeing with its finite difference.
#include "runtime/cpu/vector_math.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

using namespace ort_train;

namespace {

std::vector<float> grid(float lo, float hi, int n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  return x;
}

// Worst error in units of float epsilon, relative to max(|want|, floor).
double worst_error(const std::vector<float>& got, const std::vector<double>& want, double floor) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), floor));
  return worst / std::numeric_limits<float>::epsilon();
}

}  // namespace

TEST_CASE("vector exp, tanh, erf and sigmoid are within a few ulp of double precision", "[runtime][vector_math]") {
  INFO("vector body: " << vector_math_isa());
  // 10007 elements: not a multiple of any vector width, so the padded tail is covered.
  auto x = grid(-20.f, 20.f, 10007);
  std::vector<float> y(x.size());
  struct Case {
    const char* name;
    void (*fn)(const float*, float*, int64_t);
    std::function<double(double)> ref;
    std::vector<float> in;
  };
  std::vector<Case> cases = {
      {"exp", exp_f32, [](double v) { return std::exp(v); }, grid(-80.f, 80.f, 10007)},
      {"tanh", tanh_f32, [](double v) { return std::tanh(v); }, x},
      {"erf", erf_f32, [](double v) { return std::erf(v); }, x},
      {"sigmoid", sigmoid_f32, [](double v) { return 1 / (1 + std::exp(-v)); }, grid(-80.f, 80.f, 10007)},
  };
  for (const Case& c : cases) {
    std::vector<double> want;
    for (float v : c.in) want.push_back(c.ref(v));
    c.fn(c.in.data(), y.data(), static_cast<int64_t>(c.in.size()));
    INFO(c.name);
    CHECK(worst_error(y, want, 1e-30) < 8);
  }
  // Small arguments keep their relative accuracy (erf(x) ~ 1.128 x, tanh(x) ~ x).
  std::vector<float> small = grid(-1e-3f, 1e-3f, 1001);
  std::vector<double> want;
  for (float v : small) want.push_back(std::erf(static_cast<double>(v)));
  erf_f32(small.data(), y.data(), static_cast<int64_t>(small.size()));
  CHECK(worst_error(std::vector<float>(y.begin(), y.begin() + 1001), want, 1e-30) < 8);
}

TEST_CASE("an element's value does not depend on where it sits in the array", "[runtime][vector_math]") {
  auto x = grid(-6.f, 6.f, 333);
  std::vector<float> whole(x.size()), parts(x.size());
  for (auto fn : {exp_f32, tanh_f32, erf_f32, sigmoid_f32}) {
    fn(x.data(), whole.data(), static_cast<int64_t>(x.size()));
    // Chunks of odd sizes at odd offsets, as parallel_for may cut them.
    for (size_t b = 0; b < x.size(); b += 37) fn(x.data() + b, parts.data() + b, static_cast<int64_t>(std::min<size_t>(37, x.size() - b)));
    CHECK(whole == parts);
  }
}

TEST_CASE("in place (y == x), as the executor runs them, gives what out of place does", "[runtime][vector_math]") {
  auto x = grid(-9.f, 9.f, 1500);  // several internal blocks
  std::vector<float> out(x.size());
  for (auto fn : {exp_f32, tanh_f32, erf_f32, sigmoid_f32, silu_f32}) {
    std::vector<float> in = x;
    fn(x.data(), out.data(), static_cast<int64_t>(x.size()));
    fn(in.data(), in.data(), static_cast<int64_t>(in.size()));
    CHECK(in == out);
  }
  std::vector<float> y(x.size()), inplace = x;
  gelu_f32(x.data(), nullptr, 0, y.data(), static_cast<int64_t>(x.size()), false);
  gelu_f32(inplace.data(), nullptr, 0, inplace.data(), static_cast<int64_t>(x.size()), false);
  CHECK(inplace == y);
  // The last function run was silu: x * sigmoid(x).
  std::vector<double> want;
  for (float v : x) want.push_back(v / (1 + std::exp(-static_cast<double>(v))));
  CHECK(worst_error(out, want, 1.0) < 8);
}

TEST_CASE("GELU and its derivative: both forms, with a bias along rows", "[runtime][vector_math]") {
  const int64_t rows = 7, n = 45;
  auto x = grid(-7.f, 7.f, static_cast<int>(rows * n));
  auto bias = grid(-0.5f, 0.5f, static_cast<int>(n));
  for (bool tanh_form : {false, true}) {
    INFO("tanh form " << tanh_form);
    auto gelu = [&](double v) {
      return tanh_form ? 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                       : 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    };
    std::vector<float> y(x.size()), dx(x.size()), ones(x.size(), 1.f);
    gelu_f32(x.data(), bias.data(), n, y.data(), rows * n, tanh_form);
    gelu_grad_f32(ones.data(), x.data(), bias.data(), n, dx.data(), rows * n, tanh_form);
    std::vector<double> want_y, want_dx;
    for (int64_t i = 0; i < rows * n; ++i) {
      double v = static_cast<double>(static_cast<float>(x[size_t(i)] + bias[size_t(i % n)]));
      want_y.push_back(gelu(v));
      want_dx.push_back((gelu(v + 1e-6) - gelu(v - 1e-6)) / 2e-6);
    }
    // Errors relative to max(|value|, 1): for negative x, 1 + erf(x/sqrt2) cancels in float (as in
    // PyTorch's float GELU), so a tiny GELU value carries the erf's absolute error, not a relative one.
    CHECK(worst_error(y, want_y, 1.0) < 16);
    CHECK(worst_error(dx, want_dx, 1.0) < 16);
  }
}
