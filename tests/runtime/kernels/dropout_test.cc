// Dropout: identity in inference; in training a seeded, counter-based mask that
// is reproducible, independent of the thread count and scales what it keeps.
#include "runtime/cpu/parallel.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

Tensor ones(Dims dims) {
  Tensor x = Tensor::host(DType::kFloat, std::move(dims));
  for (float& v : x.span<float>()) v = 1.f;
  return x;
}

NodeSpec training_node(const Tensor& x, float ratio, std::vector<Attribute> attributes = {}) {
  return {"Dropout", {x, make<float>({}, {ratio}), make<bool>({}, {true})}, std::move(attributes), 2};
}

double kept_fraction(const Tensor& mask) {
  double kept = 0;
  for (bool m : mask.span<bool>()) kept += m;
  return mask.numel() ? kept / static_cast<double>(mask.numel()) : 0;
}

}  // namespace

TEST_CASE("Dropout in inference is a view of the input with an all-true mask", "[kernels][Dropout]") {
  auto x = random_tensor({4, 5}, 21);
  for (int64_t opset : {7, 10, 12, 13, 22}) {
    INFO("opset " << opset);
    auto y = run_node({"Dropout", {x}, {}, 2, opset});
    REQUIRE(y[0].raw() == x.raw());
    REQUIRE(y[1].dtype() == DType::kBool);
    REQUIRE(kept_fraction(y[1]) == 1.0);
  }
  auto ratio_only = run_node({"Dropout", {x, make<float>({}, {0.9f})}, {}, 2, 13});
  require_close(ratio_only[0], x);
  auto off = run_node({"Dropout", {x, make<float>({}, {0.9f}), make<bool>({}, {false})}, {}, 1, 13});
  require_close(off[0], x);
  require_close(run_node({"Dropout", {x}, {Attribute::make_float("ratio", 0.3f)}, 1, 10})[0], x);
}

TEST_CASE("Dropout in training with ratio 0 keeps everything", "[kernels][Dropout]") {
  auto x = random_tensor({3, 3}, 22);
  auto y = run_node(training_node(x, 0.f));
  require_close(y[0], x);
  REQUIRE(kept_fraction(y[1]) == 1.0);
}

TEST_CASE("Dropout in training keeps 1-ratio of the elements and scales them", "[kernels][Dropout]") {
  auto x = random_tensor({200, 500}, 23);
  for (float ratio : {0.1f, 0.5f, 0.75f}) {
    INFO("ratio " << ratio);
    auto y = run_node(training_node(x, ratio, {Attribute::make_int("seed", 42)}));
    REQUIRE(kept_fraction(y[1]) == Approx(1.0 - ratio).margin(0.005));
    for (int64_t i = 0; i < x.numel(); ++i) {
      float expected = y[1].data<bool>()[i] ? x.data<float>()[i] / (1.f - ratio) : 0.f;
      if (y[0].data<float>()[i] != Approx(expected).epsilon(1e-6)) REQUIRE(y[0].data<float>()[i] == Approx(expected));
    }
  }
  // The default ratio is 0.5.
  auto d = run_node({"Dropout", {ones({100000}), Tensor(), make<bool>({}, {true})}, {}, 2, 13});
  REQUIRE(kept_fraction(d[1]) == Approx(0.5).margin(0.01));
  REQUIRE(d[0].data<float>()[0] == (d[1].data<bool>()[0] ? 2.f : 0.f));
}

TEST_CASE("Dropout masks are reproducible per seed and independent of the thread count", "[kernels][Dropout]") {
  auto x = ones({300000});
  int threads = cpu_threads();
  set_cpu_threads(1);
  auto one = run_node(training_node(x, 0.3f, {Attribute::make_int("seed", 7)}));
  set_cpu_threads(4);
  auto four = run_node(training_node(x, 0.3f, {Attribute::make_int("seed", 7)}));
  set_cpu_threads(threads);
  REQUIRE(one[1].to_int64_vector() == four[1].to_int64_vector());
  auto other = run_node(training_node(x, 0.3f, {Attribute::make_int("seed", 8)}));
  REQUIRE(one[1].to_int64_vector() != other[1].to_int64_vector());
  // Without a seed attribute the run's seed decides.
  NodeSpec unseeded = training_node(x, 0.3f);
  unseeded.run_options.seed = 5;
  auto mask5 = run_node(unseeded)[1].to_int64_vector();
  REQUIRE(mask5 == run_node(unseeded)[1].to_int64_vector());
  unseeded.run_options.seed = 6;
  REQUIRE(mask5 != run_node(unseeded)[1].to_int64_vector());
}

TEST_CASE("Dropout draws a fresh mask at every step, seeded or not", "[kernels][Dropout]") {
  auto x = ones({10000});
  for (bool seeded : {true, false}) {
    INFO("seed attribute " << seeded);
    NodeSpec node = training_node(x, 0.5f);
    if (seeded) node.attributes.push_back(Attribute::make_int("seed", 3));
    auto step0 = run_node(node)[1].to_int64_vector();
    REQUIRE(step0 == run_node(node)[1].to_int64_vector());
    node.run_options.step = 1;
    REQUIRE(step0 != run_node(node)[1].to_int64_vector());
  }
}

TEST_CASE("Dropout before opset 12 drops only in a training run", "[kernels][Dropout]") {
  NodeSpec old{"Dropout", {ones({10000})}, {Attribute::make_float("ratio", 0.2f)}, 2, 10};
  REQUIRE(kept_fraction(run_node(old)[1]) == 1.0);
  old.run_options.training = true;
  REQUIRE(kept_fraction(run_node(old)[1]) == Approx(0.8).margin(0.02));
}

TEST_CASE("Dropout in training on double, scalar and empty inputs, bad ratio refused", "[kernels][Dropout]") {
  Tensor d = Tensor::host(DType::kDouble, {1000});
  for (double& v : d.span<double>()) v = 3.0;
  auto y = run_node({"Dropout", {d, make<double>({}, {0.5}), make<bool>({}, {true})}, {}, 2, 13});
  for (int64_t i = 0; i < d.numel(); ++i) REQUIRE(y[0].data<double>()[i] == (y[1].data<bool>()[i] ? 6.0 : 0.0));
  auto s = run_node(training_node(make<float>({}, {2.f}), 0.5f));
  REQUIRE(s[0].dims().empty());
  REQUIRE(s[0].data<float>()[0] == (s[1].data<bool>()[0] ? 4.f : 0.f));
  auto e = run_node(training_node(Tensor::host(DType::kFloat, {0, 3}), 0.5f));
  REQUIRE(e[0].dims() == Dims{0, 3});
  REQUIRE(e[1].dims() == Dims{0, 3});
  Status bad = run_node_error(training_node(ones({4}), 1.f));
  REQUIRE(bad.message().find("Dropout") != std::string::npos);
  REQUIRE_FALSE(run_node_error(training_node(ones({4}), -0.1f)).ok());
}
