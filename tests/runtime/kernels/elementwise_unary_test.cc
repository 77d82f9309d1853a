#include <cmath>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("unary math matches libm on float and double", "[kernels][Sqrt][Exp][Log][Erf][Tanh]") {
  auto x = make<float>({4}, {0.25f, 1.f, 2.f, 9.f});
  require_close(run_node({"Sqrt", {x}})[0], make<float>({4}, {0.5f, 1.f, std::sqrt(2.f), 3.f}));
  require_close(run_node({"Log", {x}})[0], make<float>({4}, {std::log(0.25f), 0.f, std::log(2.f), std::log(9.f)}));
  auto d = make<double>({2}, {-0.5, 0.5});
  require_close(run_node({"Erf", {d}})[0], make<double>({2}, {std::erf(-0.5), std::erf(0.5)}), 1e-12, 0);
  require_close(run_node({"Tanh", {make<float>({}, {0.3f})}})[0], make<float>({}, {std::tanh(0.3f)}));
  REQUIRE(run_node({"Exp", {Tensor::host(DType::kFloat, {0, 2})}})[0].dims() == Dims{0, 2});
}

TEST_CASE("activations: Relu on ints, LeakyRelu, stable Sigmoid, both Gelus", "[kernels][Relu][LeakyRelu][Sigmoid][Gelu]") {
  REQUIRE(run_node({"Relu", {make<int32_t>({3}, {-2, 0, 5})}})[0].to_int64_vector() == std::vector<int64_t>{0, 0, 5});
  require_close(run_node({"LeakyRelu", {make<float>({2}, {-2, 3})}, {Attribute::make_float("alpha", 0.1f)}})[0],
                make<float>({2}, {-0.2f, 3}));
  auto s = run_node({"Sigmoid", {make<float>({3}, {-100, 0, 100})}})[0];
  require_close(s, make<float>({3}, {0, 0.5f, 1}), 1e-6, 1e-30);
  float v = 0.7f;
  require_close(run_node({"Gelu", {make<float>({1}, {v})}, {}, 1, 20})[0],
                make<float>({1}, {0.5f * v * (1 + std::erf(v / std::sqrt(2.f)))}));
  require_close(run_node({"Gelu", {make<float>({1}, {v})}, {Attribute::make_string("approximate", "tanh")}, 1, 20})[0],
                make<float>({1}, {0.5f * v * (1 + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)))}));
}

TEST_CASE("Clip: opset 6 attributes, opset 13 inputs, min > max, integers", "[kernels][Clip]") {
  auto x = make<float>({4}, {-5, -1, 1, 5});
  require_close(run_node({"Clip", {x}, {Attribute::make_float("min", -2), Attribute::make_float("max", 2)}, 1, 6})[0],
                make<float>({4}, {-2, -1, 1, 2}));
  require_close(run_node({"Clip", {x, Tensor(), make<float>({}, {0})}})[0], make<float>({4}, {-5, -1, 0, 0}));
  require_close(run_node({"Clip", {x, make<float>({}, {3}), make<float>({}, {1})}})[0], make<float>({4}, {1, 1, 1, 1}));
  REQUIRE(run_node({"Clip", {make<int64_t>({2}, {-9, 9}), make<int64_t>({}, {-1}), make<int64_t>({}, {1})}})[0]
              .to_int64_vector() == std::vector<int64_t>{-1, 1});
}

TEST_CASE("Softmax and LogSoftmax: opset 13 axis vs opset 11 coercion, large values", "[kernels][Softmax][LogSoftmax]") {
  auto x = make<float>({2, 2}, {1000, 1001, 0, 0});
  auto s13 = run_node({"Softmax", {x}, {Attribute::make_int("axis", 0)}})[0];
  require_close(s13, make<float>({2, 2}, {1, 1, 0, 0}), 1e-5, 1e-6);
  auto s11 = run_node({"Softmax", {make<float>({1, 2, 2}, {0, 0, 0, 0})}, {}, 1, 11})[0];  // 2-D over 4 elems
  require_close(s11, make<float>({1, 2, 2}, {0.25f, 0.25f, 0.25f, 0.25f}));
  auto l = run_node({"LogSoftmax", {make<float>({2}, {1000, 1000})}})[0];
  require_close(l, make<float>({2}, {-std::log(2.f), -std::log(2.f)}));
}

TEST_CASE("Cast between floats, ints and bool, NaN saturates to 0", "[kernels][Cast]") {
  auto to = [](DType t) { return Attribute::make_int("to", static_cast<int64_t>(t)); };
  auto c = run_node({"Cast", {make<float>({4}, {1.7f, -2.2f, 0.f, NAN})}, {to(DType::kInt32)}})[0];
  REQUIRE(c.dtype() == DType::kInt32);
  REQUIRE(c.to_int64_vector() == std::vector<int64_t>{1, -2, 0, 0});
  auto b = run_node({"Cast", {make<int64_t>({3}, {0, 2, -1})}, {to(DType::kBool)}})[0];
  REQUIRE(b.to_int64_vector() == std::vector<int64_t>{0, 1, 1});
  auto like = run_node({"CastLike", {make<int64_t>({1}, {3}), make<double>({1}, {0})}})[0];
  REQUIRE(like.dtype() == DType::kDouble);
}

TEST_CASE("Dropout: identity in inference, seeded, scaled and reproducible in training", "[kernels][Dropout]") {
  auto x = Tensor::host(DType::kFloat, {100000});
  for (float& v : x.span<float>()) v = 1.f;
  auto inf = run_node({"Dropout", {x}, {}, 2});
  REQUIRE(inf[0].raw() == x.raw());
  REQUIRE(inf[1].to_int64_vector()[0] == 1);
  NodeSpec train{"Dropout", {x, make<float>({}, {0.25f}), make<bool>({}, {true})},
                 {Attribute::make_int("seed", 42)}, 2};
  auto a = run_node(train);
  auto b = run_node(train);
  REQUIRE(a[1].to_int64_vector() == b[1].to_int64_vector());
  double kept = 0;
  for (bool m : a[1].span<bool>()) kept += m;
  REQUIRE(kept / 100000 == Approx(0.75).margin(0.01));
  for (int64_t i = 0; i < 100; ++i)
    REQUIRE(a[0].data<float>()[i] == (a[1].data<bool>()[i] ? Approx(1 / 0.75f) : Approx(0)));
}
