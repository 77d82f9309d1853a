#include <cmath>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Reduce*: axes as attribute and input, keepdims, negative axes, empty axes", "[kernels][ReduceSum][ReduceMean][ReduceMax][ReduceMin]") {
  auto x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  require_close(run_node({"ReduceSum", {x, make<int64_t>({1}, {-1})}, {}, 1, 13, {1}})[0], make<float>({2, 1}, {6, 15}));
  require_close(run_node({"ReduceMean", {x}, {Attribute::make_ints("axes", {0}), Attribute::make_int("keepdims", 0)}, 1, 13})[0],
                make<float>({3}, {2.5f, 3.5f, 4.5f}));
  require_close(run_node({"ReduceMax", {x}, {Attribute::make_int("keepdims", 0)}, 1, 13})[0], make<float>({}, {6}));
  require_close(run_node({"ReduceMin", {x, make<int64_t>({1}, {1})}, {}, 1, 18, {1}})[0], make<float>({2, 1}, {1, 4}));
  // noop_with_empty_axes keeps the input.
  require_close(run_node({"ReduceSum", {x, make<int64_t>({0}, {})}, {Attribute::make_int("noop_with_empty_axes", 1)}, 1, 13, {1}})[0], x);
  auto i = run_node({"ReduceSum", {make<int64_t>({2, 2}, {1, 2, 3, 4})}, {Attribute::make_int("keepdims", 0)}, 1, 13})[0];
  REQUIRE(i.to_int64_vector() == std::vector<int64_t>{10});
}

TEST_CASE("Reduce over middle axes and over empty dims", "[kernels][ReduceSum][ReduceMax]") {
  auto x = random_tensor({2, 3, 4, 5}, 3);
  auto y = run_node({"ReduceSum", {x, make<int64_t>({2}, {1, 3})}, {}, 1, 13, {1}})[0];
  REQUIRE(y.dims() == Dims{2, 1, 4, 1});
  double s = 0;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t w = 0; w < 5; ++w) s += x.data<float>()[((1 * 3 + c) * 4 + 2) * 5 + w];
  REQUIRE(y.data<float>()[1 * 4 + 2] == Approx(s).epsilon(1e-5));
  auto e = Tensor::host(DType::kFloat, {2, 0});
  require_close(run_node({"ReduceSum", {e, make<int64_t>({1}, {1})}, {}, 1, 13, {1}})[0], make<float>({2, 1}, {0, 0}));
  auto m = run_node({"ReduceMax", {e}, {Attribute::make_ints("axes", {1})}, 1, 13})[0];
  REQUIRE(std::isinf(m.data<float>()[0]));
}

TEST_CASE("ReduceMax and ReduceMin of bools (opset 20): any and all", "[kernels][ReduceMax][ReduceMin]") {
  auto b = make<bool>({2, 3}, {true, false, false, true, true, true});
  auto any = run_node({"ReduceMax", {b, make<int64_t>({1}, {1})}, {Attribute::make_int("keepdims", 0)}, 1, 20, {1}})[0];
  REQUIRE(any.dtype() == DType::kBool);
  CHECK(std::vector<bool>(any.data<bool>(), any.data<bool>() + 2) == std::vector<bool>{true, true});
  auto all = run_node({"ReduceMin", {b, make<int64_t>({1}, {1})}, {Attribute::make_int("keepdims", 0)}, 1, 20, {1}})[0];
  CHECK(std::vector<bool>(all.data<bool>(), all.data<bool>() + 2) == std::vector<bool>{false, true});
  auto col = run_node({"ReduceMin", {b, make<int64_t>({1}, {0})}, {}, 1, 20, {1}})[0];
  CHECK(std::vector<bool>(col.data<bool>(), col.data<bool>() + 3) == std::vector<bool>{true, false, false});
  // Sums of bools stay refused, as ONNX's type constraints say.
  CHECK(run_node_error({"ReduceSum", {b, make<int64_t>({1}, {1})}, {}, 1, 20, {1}}).message().find("bool") !=
        std::string::npos);
}

TEST_CASE("LayerNormalization over the last axes, with Mean and InvStdDev", "[kernels][LayerNormalization]") {
  auto x = make<float>({2, 2}, {1, 3, 2, 4});
  auto out = run_node({"LayerNormalization", {x, make<float>({2}, {1, 2}), make<float>({2}, {0, 1})},
                       {Attribute::make_float("epsilon", 0.f)}, 3});
  require_close(out[0], make<float>({2, 2}, {-1, 3, -1, 3}), 1e-5, 1e-5);
  REQUIRE(out[1].dims() == Dims{2, 1});
  require_close(out[1], make<float>({2, 1}, {2, 3}));
  REQUIRE(out[2].data<float>()[0] == Approx(1.0));
}

TEST_CASE("BatchNormalization inference and training mode with running stats", "[kernels][BatchNormalization]") {
  auto x = make<float>({2, 1, 2}, {1, 3, 5, 7});
  auto one = make<float>({1}, {1}), zero = make<float>({1}, {0});
  auto inf = run_node({"BatchNormalization", {x, one, zero, make<float>({1}, {4}), make<float>({1}, {4})},
                       {Attribute::make_float("epsilon", 0.f)}})[0];
  require_close(inf, make<float>({2, 1, 2}, {-1.5f, -0.5f, 0.5f, 1.5f}));
  auto tr = run_node({"BatchNormalization", {x, one, zero, zero, one},
                      {Attribute::make_float("epsilon", 0.f), Attribute::make_int("training_mode", 1),
                       Attribute::make_float("momentum", 0.9f)}, 3, 15});
  // batch mean 4, biased var 5
  require_close(tr[0], make<float>({2, 1, 2}, {-3 / std::sqrt(5.f), -1 / std::sqrt(5.f), 1 / std::sqrt(5.f), 3 / std::sqrt(5.f)}));
  require_close(tr[1], make<float>({1}, {0.4f}));
  require_close(tr[2], make<float>({1}, {0.9f + 0.5f}));
}

TEST_CASE("SoftmaxCrossEntropyLoss and NLL: mean over non-ignored, weights, spatial dims", "[kernels][SoftmaxCrossEntropyLoss][NegativeLogLikelihoodLoss]") {
  auto logits = make<float>({2, 2}, {0, 0, 0, std::log(3.f)});
  auto labels = make<int64_t>({2}, {0, 1});
  auto l = run_node({"SoftmaxCrossEntropyLoss", {logits, labels}, {}, 2})[0];
  REQUIRE(l.data<float>()[0] == Approx((std::log(2.f) + std::log(4.f / 3.f)) / 2));
  auto ign = run_node({"SoftmaxCrossEntropyLoss", {logits, make<int64_t>({2}, {0, -100})},
                       {Attribute::make_int("ignore_index", -100)}})[0];
  REQUIRE(ign.data<float>()[0] == Approx(std::log(2.f)));
  auto w = run_node({"NegativeLogLikelihoodLoss", {make<float>({2, 2, 1}, {-1, -2, -3, -4}), make<int64_t>({2, 1}, {0, 1}),
                                                   make<float>({2}, {1, 3})}})[0];
  REQUIRE(w.data<float>()[0] == Approx((1 * 1 + 3 * 4) / 4.0));
  auto none = run_node({"NegativeLogLikelihoodLoss", {make<float>({2, 2}, {-1, -2, -3, -4}), labels},
                        {Attribute::make_string("reduction", "none")}})[0];
  require_close(none, make<float>({2}, {1, 4}));
  REQUIRE_THAT(run_node_error({"SoftmaxCrossEntropyLoss", {logits, make<int64_t>({2}, {0, 5})}}).message(),
               Catch::Contains("out of range"));
}
