// Kernels of issue 30's elementwise ops where the ONNX node tests say little:
// Mish (no case in onnx 1.12) against its formula in long double, Shrink on
// integers, PRelu's per-channel slope, Mod's two sign conventions on integers
// and ArgMax/ArgMin's ties and NaN. The rest are checked by
// tools/make_node_tests.py's cases (conformance.made_node_tests).
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Mish matches x tanh(softplus(x))", "[kernels][Mish]") {
  Tensor x = make<double>({7}, {-30, -3, -0.5, 0, 0.5, 3, 30});
  NodeSpec spec{.op = "Mish", .inputs = {x}, .opset = 18};
  Tensor y = run_node(spec)[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    long double v = x.data<double>()[i];
    long double expected = v * std::tanh(std::log1p(std::exp(v)));
    INFO("x = " << x.data<double>()[i]);
    CHECK(std::abs(y.data<double>()[i] - static_cast<double>(expected)) <= 1e-15 * (1 + std::abs((double)expected)));
  }
}

TEST_CASE("Shrink runs on integers", "[kernels][Shrink]") {
  Tensor x = make<int64_t>({5}, {-3, -1, 0, 1, 4});
  NodeSpec spec{.op = "Shrink", .inputs = {x},
                .attributes = {Attribute::make_float("lambd", 1.5f), Attribute::make_float("bias", 1.f)}};
  Tensor y = run_node(spec)[0];
  REQUIRE(y.dtype() == DType::kInt64);
  CHECK(y.to_int64_vector() == std::vector<int64_t>{-2, 0, 0, 0, 3});
}

TEST_CASE("PRelu broadcasts a per-channel slope", "[kernels][PRelu]") {
  Tensor x = make<float>({1, 2, 2}, {-1, 2, -3, 4});
  Tensor slope = make<float>({2, 1}, {0.5f, 0.25f});
  Tensor y = run_node({.op = "PRelu", .inputs = {x, slope}})[0];
  require_close(y, make<float>({1, 2, 2}, {-0.5f, 2, -0.75f, 4}), 0, 0);
  // A slope that would broadcast X to a bigger shape is refused.
  Status s = run_node_error({.op = "PRelu", .inputs = {make<float>({2}, {1, 2}), make<float>({3, 1}, {1, 2, 3})}});
  CHECK_THAT(s.message(), Catch::Contains("does not broadcast to X"));
}

TEST_CASE("Mod follows the divisor's sign, fmod the dividend's", "[kernels][Mod]") {
  Tensor a = make<int32_t>({4}, {-7, 7, -7, 7});
  Tensor b = make<int32_t>({4}, {3, -3, -3, 0});
  Tensor python = run_node({.op = "Mod", .inputs = {a, b}})[0];
  CHECK(python.to_int64_vector() == std::vector<int64_t>{2, -2, -1, 0});
  Tensor c = run_node({.op = "Mod", .inputs = {a, b}, .attributes = {Attribute::make_int("fmod", 1)}})[0];
  CHECK(c.to_int64_vector() == std::vector<int64_t>{-1, 1, -1, 0});
  Tensor lowest = make<int64_t>({1}, {std::numeric_limits<int64_t>::lowest()});
  CHECK(run_node({.op = "Mod", .inputs = {lowest, make<int64_t>({1}, {-1})}})[0].to_int64_vector()[0] == 0);
  // Floats need fmod = 1, as the ONNX spec says.
  Status s = run_node_error({.op = "Mod", .inputs = {make<float>({1}, {1.5f}), make<float>({1}, {1.f})}});
  CHECK_THAT(s.message(), Catch::Contains("fmod=1"));
}

TEST_CASE("ArgMax and ArgMin: ties, select_last_index and NaN", "[kernels][ArgMax][ArgMin]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = make<float>({2, 4}, {1, 3, 3, 0, 2, nan, 5, nan});
  auto arg = [&](const char* op, int64_t axis, int64_t last, int64_t keep) {
    return run_node({.op = op, .inputs = {x},
                     .attributes = {Attribute::make_int("axis", axis), Attribute::make_int("select_last_index", last),
                                    Attribute::make_int("keepdims", keep)}})[0];
  };
  Tensor first = arg("ArgMax", 1, 0, 1);
  CHECK(first.dims() == Dims{2, 1});
  CHECK(first.to_int64_vector() == std::vector<int64_t>{1, 1});
  CHECK(arg("ArgMax", 1, 1, 0).to_int64_vector() == std::vector<int64_t>{2, 3});
  CHECK(arg("ArgMin", -1, 0, 0).to_int64_vector() == std::vector<int64_t>{3, 1});
  CHECK(arg("ArgMin", 0, 0, 0).to_int64_vector() == std::vector<int64_t>{0, 1, 0, 1});
}
