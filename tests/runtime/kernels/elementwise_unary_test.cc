// Unary math, activations, Clip, Not and Identity. Softmax, Cast and Dropout
// have their own files.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// Runs a one-input op over x and compares with fn applied element by element.
template <typename T, typename F>
void require_matches(const std::string& op, const Tensor& x, F fn, double rtol = 1e-6) {
  Tensor expected = Tensor::host(x.dtype(), x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) expected.data<T>()[i] = fn(x.data<T>()[i]);
  INFO(op);
  require_close(run_node({op, {x}})[0], expected, rtol, 1e-12);
}

Tensor random_double(Dims dims, uint64_t seed, float lo, float hi) {
  Tensor f = random_tensor(std::move(dims), seed, lo, hi);
  Tensor d = Tensor::host(DType::kDouble, f.dims());
  for (int64_t i = 0; i < f.numel(); ++i) d.data<double>()[i] = f.data<float>()[i];
  return d;
}

}  // namespace

TEST_CASE("unary math matches libm on float and double", "[kernels][Sqrt][Exp][Log][Neg][Abs][Reciprocal][Sin][Cos]") {
  auto pos = random_tensor({3, 70000}, 1, 0.1f, 4.f);  // big enough to run on several threads
  require_matches<float>("Sqrt", pos, [](float v) { return std::sqrt(v); });
  require_matches<float>("Log", pos, [](float v) { return std::log(v); });
  require_matches<float>("Reciprocal", pos, [](float v) { return 1.f / v; });
  auto x = random_tensor({5, 7}, 2, -3.f, 3.f);
  require_matches<float>("Exp", x, [](float v) { return std::exp(v); });
  require_matches<float>("Neg", x, [](float v) { return -v; });
  require_matches<float>("Abs", x, [](float v) { return std::fabs(v); });
  require_matches<float>("Sin", x, [](float v) { return std::sin(v); });
  require_matches<float>("Cos", x, [](float v) { return std::cos(v); });
  auto d = random_double({4, 3}, 3, 0.1f, 5.f);
  require_matches<double>("Sqrt", d, [](double v) { return std::sqrt(v); }, 1e-14);
  require_matches<double>("Log", d, [](double v) { return std::log(v); }, 1e-14);
  require_matches<double>("Exp", d, [](double v) { return std::exp(v); }, 1e-14);
  require_matches<double>("Reciprocal", d, [](double v) { return 1.0 / v; }, 1e-14);
}

TEST_CASE("unary math edge values follow IEEE: log 0, sqrt of negatives, exp overflow", "[kernels][Sqrt][Log][Exp]") {
  auto x = make<float>({3}, {0.f, -1.f, 100.f});
  Tensor log_y = run_node({"Log", {x}})[0];
  auto l = log_y.span<float>();
  REQUIRE((std::isinf(l[0]) && l[0] < 0));
  REQUIRE(std::isnan(l[1]));
  REQUIRE(std::isnan(run_node({"Sqrt", {x}})[0].data<float>()[1]));
  REQUIRE(std::isinf(run_node({"Exp", {x}})[0].data<float>()[2]));
  REQUIRE(std::isinf(run_node({"Reciprocal", {x}})[0].data<float>()[0]));
}

TEST_CASE("unary ops keep scalar and empty shapes", "[kernels][Sqrt][Exp][Tanh][Relu][Not]") {
  require_close(run_node({"Tanh", {make<float>({}, {0.3f})}})[0], make<float>({}, {std::tanh(0.3f)}));
  require_close(run_node({"Sqrt", {make<double>({}, {4.0})}})[0], make<double>({}, {2.0}));
  for (const char* op : {"Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Sin", "Cos", "Relu", "Sigmoid", "Tanh",
                         "Erf", "LeakyRelu", "Clip"}) {
    INFO(op);
    auto y = run_node({op, {Tensor::host(DType::kFloat, {0, 2})}})[0];
    REQUIRE(y.dims() == Dims{0, 2});
    REQUIRE(y.dtype() == DType::kFloat);
  }
  REQUIRE(run_node({"Not", {Tensor::host(DType::kBool, {3, 0})}})[0].dims() == Dims{3, 0});
  REQUIRE(run_node({"Gelu", {Tensor::host(DType::kFloat, {0})}, {}, 1, 20})[0].dims() == Dims{0});
}

TEST_CASE("Neg and Abs on integers, the lowest value wrapping like numpy", "[kernels][Neg][Abs]") {
  constexpr int32_t lo = std::numeric_limits<int32_t>::lowest();
  auto i32 = make<int32_t>({4}, {-3, 0, 7, lo});
  REQUIRE(run_node({"Neg", {i32}})[0].to_int64_vector() == std::vector<int64_t>{3, 0, -7, lo});
  REQUIRE(run_node({"Abs", {i32}})[0].to_int64_vector() == std::vector<int64_t>{3, 0, 7, lo});
  auto i8 = make<int8_t>({3}, {-128, -5, 5});
  REQUIRE(run_node({"Abs", {i8}})[0].to_int64_vector() == std::vector<int64_t>{-128, 5, 5});
  auto i64 = make<int64_t>({2}, {-9, 9});
  REQUIRE(run_node({"Neg", {i64}})[0].to_int64_vector() == std::vector<int64_t>{9, -9});
  REQUIRE(run_node({"Abs", {make<uint8_t>({2}, {0, 200})}})[0].to_int64_vector() == std::vector<int64_t>{0, 200});
}

TEST_CASE("float-only ops refuse integer inputs with the node named", "[kernels][Sqrt][Not]") {
  Status s = run_node_error({"Sqrt", {make<int32_t>({2}, {4, 9})}});
  REQUIRE(s.message().find("Sqrt") != std::string::npos);
  REQUIRE_FALSE(run_node_error({"Not", {make<float>({1}, {1.f})}}).ok());
}

TEST_CASE("Not negates booleans", "[kernels][Not]") {
  auto y = run_node({"Not", {make<bool>({2, 2}, {true, false, false, true})}})[0];
  REQUIRE(y.dtype() == DType::kBool);
  REQUIRE(y.to_int64_vector() == std::vector<int64_t>{0, 1, 1, 0});
  REQUIRE(run_node({"Not", {make<bool>({}, {false})}})[0].to_int64_vector() == std::vector<int64_t>{1});
}

TEST_CASE("Identity returns a view of its input", "[kernels][Identity]") {
  auto x = make<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto y = run_node({"Identity", {x}, {}, 1, 16})[0];
  REQUIRE(y.raw() == x.raw());
  REQUIRE(y.dims() == x.dims());
  REQUIRE(run_node({"Identity", {make<float>({}, {2.f})}})[0].data<float>()[0] == 2.f);
  REQUIRE(run_node({"Identity", {Tensor::host(DType::kBool, {0})}, {}, 1, 13})[0].dims() == Dims{0});
}

TEST_CASE("activations: Relu on ints and NaN, LeakyRelu, stable Sigmoid, Tanh, Erf", "[kernels][Relu][LeakyRelu][Sigmoid][Tanh][Erf]") {
  REQUIRE(run_node({"Relu", {make<int32_t>({3}, {-2, 0, 5})}})[0].to_int64_vector() == std::vector<int64_t>{0, 0, 5});
  REQUIRE(run_node({"Relu", {make<int8_t>({2}, {-128, 127})}, {}, 1, 14})[0].to_int64_vector() ==
          std::vector<int64_t>{0, 127});
  Tensor relu_y = run_node({"Relu", {make<float>({3}, {-1.f, NAN, 2.f})}})[0];
  auto r = relu_y.span<float>();
  REQUIRE(r[0] == 0.f);
  REQUIRE(std::isnan(r[1]));
  REQUIRE(r[2] == 2.f);
  require_close(run_node({"LeakyRelu", {make<float>({2}, {-2, 3})}, {Attribute::make_float("alpha", 0.1f)}})[0],
                make<float>({2}, {-0.2f, 3}));
  require_close(run_node({"LeakyRelu", {make<double>({2}, {-2, 3})}})[0], make<double>({2}, {-0.02, 3}), 1e-7);
  auto s = run_node({"Sigmoid", {make<float>({5}, {-1000, -100, 0, 100, 1000})}})[0];
  require_close(s, make<float>({5}, {0, std::exp(-100.f), 0.5f, 1, 1}), 1e-6, 1e-30);
  auto x = random_double({6, 5}, 4, -4.f, 4.f);
  require_matches<double>("Sigmoid", x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 1e-14);
  require_matches<double>("Tanh", x, [](double v) { return std::tanh(v); }, 1e-14);
  require_matches<double>("Erf", x, [](double v) { return std::erf(v); }, 1e-14);
}

TEST_CASE("Gelu: exact and tanh approximations at opset 20, bad approximate refused", "[kernels][Gelu]") {
  auto x = random_double({3, 4}, 5, -5.f, 5.f);
  auto exact = run_node({"Gelu", {x}, {}, 1, 20})[0];
  auto approx = run_node({"Gelu", {x}, {Attribute::make_string("approximate", "tanh")}, 1, 20})[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.data<double>()[i];
    REQUIRE(exact.data<double>()[i] == Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).epsilon(1e-13));
    double inner = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
    REQUIRE(approx.data<double>()[i] == Approx(0.5 * v * (1 + std::tanh(inner))).epsilon(1e-13));
  }
  float v = 0.7f;
  require_close(run_node({"Gelu", {make<float>({}, {v})}, {}, 1, 20})[0],
                make<float>({}, {0.5f * v * (1 + std::erf(v / std::sqrt(2.f)))}));
  REQUIRE_FALSE(run_node_error({"Gelu", {x}, {Attribute::make_string("approximate", "sigmoid")}, 1, 20}).ok());
}

TEST_CASE("Clip: opset 6 attributes, opset 11+ inputs, omitted bounds, min > max", "[kernels][Clip]") {
  auto x = make<float>({4}, {-5, -1, 1, 5});
  require_close(run_node({"Clip", {x}, {Attribute::make_float("min", -2), Attribute::make_float("max", 2)}, 1, 6})[0],
                make<float>({4}, {-2, -1, 1, 2}));
  require_close(run_node({"Clip", {x}, {Attribute::make_float("max", 0)}, 1, 6})[0], make<float>({4}, {-5, -1, 0, 0}));
  require_close(run_node({"Clip", {x}, {}, 1, 6})[0], x);
  require_close(run_node({"Clip", {x, Tensor(), make<float>({}, {0})}})[0], make<float>({4}, {-5, -1, 0, 0}));
  require_close(run_node({"Clip", {x, make<float>({}, {0})}, {}, 1, 11})[0], make<float>({4}, {0, 0, 1, 5}));
  require_close(run_node({"Clip", {x}, {}, 1, 13})[0], x);
  require_close(run_node({"Clip", {x, make<float>({}, {3}), make<float>({}, {1})}})[0], make<float>({4}, {1, 1, 1, 1}));
  require_close(run_node({"Clip", {make<float>({}, {7}), make<float>({}, {0}), make<float>({}, {6})}})[0],
                make<float>({}, {6}));
  auto nan = run_node({"Clip", {make<float>({1}, {NAN}), make<float>({}, {0}), make<float>({}, {1})}})[0];
  REQUIRE(std::isnan(nan.data<float>()[0]));
}

TEST_CASE("Clip on integers, and bounds of the wrong dtype or size refused", "[kernels][Clip]") {
  REQUIRE(run_node({"Clip", {make<int64_t>({2}, {-9, 9}), make<int64_t>({}, {-1}), make<int64_t>({}, {1})}})[0]
              .to_int64_vector() == std::vector<int64_t>{-1, 1});
  REQUIRE(run_node({"Clip", {make<uint8_t>({3}, {0, 100, 255}), Tensor(), make<uint8_t>({}, {200})}})[0]
              .to_int64_vector() == std::vector<int64_t>{0, 100, 200});
  REQUIRE(run_node({"Clip", {make<int8_t>({2}, {-100, 100}), make<int8_t>({1}, {-10})}})[0].to_int64_vector() ==
          std::vector<int64_t>{-10, 100});
  Status s = run_node_error({"Clip", {make<float>({2}, {1, 2}), make<double>({}, {0})}});
  REQUIRE(s.message().find("Clip") != std::string::npos);
  REQUIRE_FALSE(run_node_error({"Clip", {make<float>({2}, {1, 2}), make<float>({2}, {0, 0})}}).ok());
}
