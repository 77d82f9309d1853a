// The random ops: moments of large draws, the seed and step contract (the same
// (seed, step) draws the same values; the next step draws afresh), the *Like
// forms' shape and dtype, and Bernoulli's frequencies and output dtypes.
#include <cmath>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

NodeSpec random_spec(const char* op, std::vector<Attribute> attrs, uint64_t step = 0) {
  NodeSpec s{.op = op, .attributes = std::move(attrs)};
  s.run_options.seed = 7;
  s.run_options.step = step;
  return s;
}

std::pair<double, double> mean_and_std(const Tensor& t) {
  std::vector<double> v = t.to_double_vector();
  double m = 0, q = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) q += (x - m) * (x - m);
  return {m, std::sqrt(q / static_cast<double>(v.size()))};
}

}  // namespace

TEST_CASE("RandomNormal and RandomUniform draw their distributions", "[kernels][RandomNormal][RandomUniform]") {
  Tensor n = run_node(random_spec("RandomNormal", {Attribute::make_ints("shape", {400, 250}),
                                                   Attribute::make_float("mean", 2.f),
                                                   Attribute::make_float("scale", 0.5f)}))[0];
  REQUIRE(n.dtype() == DType::kFloat);
  auto [m, s] = mean_and_std(n);
  CHECK(std::abs(m - 2.0) < 0.01);
  CHECK(std::abs(s - 0.5) < 0.01);
  Tensor u = run_node(random_spec("RandomUniform", {Attribute::make_ints("shape", {100000}),
                                                    Attribute::make_float("low", -1.f), Attribute::make_float("high", 3.f),
                                                    Attribute::make_int("dtype", 11)}))[0];
  REQUIRE(u.dtype() == DType::kDouble);
  std::vector<double> v = u.to_double_vector();
  CHECK(*std::min_element(v.begin(), v.end()) >= -1.0);
  CHECK(*std::max_element(v.begin(), v.end()) < 3.0);
  auto [mu, su] = mean_and_std(u);
  CHECK(std::abs(mu - 1.0) < 0.02);
  CHECK(std::abs(su - 4.0 / std::sqrt(12.0)) < 0.02);
}

TEST_CASE("A seed and step draw the same values, the next step draws afresh", "[kernels][RandomNormal]") {
  std::vector<Attribute> attrs = {Attribute::make_ints("shape", {64}), Attribute::make_float("seed", 3.f)};
  Tensor a = run_node(random_spec("RandomNormal", attrs, 5))[0];
  Tensor b = run_node(random_spec("RandomNormal", attrs, 5))[0];
  Tensor c = run_node(random_spec("RandomNormal", attrs, 6))[0];
  CHECK(a.to_double_vector() == b.to_double_vector());
  CHECK(a.to_double_vector() != c.to_double_vector());
}

TEST_CASE("The Like forms take the input's shape and dtype", "[kernels][RandomUniformLike][RandomNormalLike]") {
  NodeSpec s = random_spec("RandomUniformLike", {});
  s.inputs = {make<double>({2, 3}, {0, 0, 0, 0, 0, 0})};
  Tensor u = run_node(s)[0];
  CHECK(u.dims() == Dims{2, 3});
  CHECK(u.dtype() == DType::kDouble);
  s.op = "RandomNormalLike";
  s.attributes = {Attribute::make_int("dtype", 1)};
  Tensor n = run_node(s)[0];
  CHECK(n.dtype() == DType::kFloat);
}

TEST_CASE("Bernoulli samples its probabilities", "[kernels][Bernoulli]") {
  const int64_t count = 30000;
  Tensor p = Tensor::host(DType::kFloat, {3, count});
  for (int64_t i = 0; i < count; ++i) {
    p.data<float>()[i] = 0.f;
    p.data<float>()[count + i] = 1.f;
    p.data<float>()[2 * count + i] = 0.3f;
  }
  NodeSpec s = random_spec("Bernoulli", {Attribute::make_int("dtype", 9)});
  s.opset = 15;
  s.inputs = {p};
  Tensor b = run_node(s)[0];
  REQUIRE(b.dtype() == DType::kBool);
  int64_t ones[3] = {0, 0, 0};
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < count; ++i) ones[r] += b.data<bool>()[r * count + i];
  CHECK(ones[0] == 0);
  CHECK(ones[1] == count);
  CHECK(std::abs(static_cast<double>(ones[2]) / count - 0.3) < 0.01);
  s.attributes = {};
  CHECK(run_node(s)[0].dtype() == DType::kFloat);
}
