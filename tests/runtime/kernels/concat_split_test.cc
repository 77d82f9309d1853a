// Concat and Split: negative axes, empty parts, every dtype, the split attribute
// (before 13), input (13+) and num_outputs (18+) with its smaller last chunk.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Concat and Split along negative axes, uneven split at opset 18", "[kernels][Concat][Split]") {
  auto a = make<float>({2, 1}, {1, 2});
  auto b = make<float>({2, 2}, {3, 4, 5, 6});
  auto c = run_node({"Concat", {a, b, Tensor::host(DType::kFloat, {2, 0})}, {Attribute::make_int("axis", -1)}});
  require_close(c[0], make<float>({2, 3}, {1, 3, 4, 2, 5, 6}));
  auto s = run_node({"Split", {make<float>({5}, {1, 2, 3, 4, 5})}, {Attribute::make_int("num_outputs", 2)}, 2, 18});
  require_close(s[0], make<float>({3}, {1, 2, 3}));
  require_close(s[1], make<float>({2}, {4, 5}));
  auto s2 = run_node({"Split", {make<float>({2, 3}, {1, 2, 3, 4, 5, 6}), make<int64_t>({2}, {1, 2})},
                      {Attribute::make_int("axis", -1)}, 2, 13, {1}});
  require_close(s2[1], make<float>({2, 2}, {2, 3, 5, 6}));
}

TEST_CASE("Concat of large blocks matches a per-element reference, for every dtype", "[kernels][Concat]") {
  for (DType dt : {DType::kFloat, DType::kInt64, DType::kBool, DType::kInt8, DType::kUInt16}) {
    INFO(dtype_name(dt));
    auto a = counting_tensor(dt, {3, 50, 40});
    auto b = counting_tensor(dt, {3, 70, 40});
    auto c = run_node({"Concat", {a, b}, {Attribute::make_int("axis", 1)}});
    REQUIRE(c[0].dtype() == dt);
    REQUIRE(c[0].dims() == Dims{3, 120, 40});
    auto av = a.to_int64_vector(), bv = b.to_int64_vector(), cv = c[0].to_int64_vector();
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 120; ++j)
        for (int64_t k = 0; k < 40; ++k) {
          int64_t want = j < 50 ? av[(i * 50 + j) * 40 + k] : bv[(i * 70 + j - 50) * 40 + k];
          if (cv[(i * 120 + j) * 40 + k] != want) FAIL("mismatch at " << i << "," << j << "," << k);
        }
  }
}

TEST_CASE("Concat of one input, of empty inputs, and its errors", "[kernels][Concat]") {
  auto one = run_node({"Concat", {make<int32_t>({2}, {4, 5})}, {Attribute::make_int("axis", 0)}});
  REQUIRE(one[0].to_int64_vector() == std::vector<int64_t>{4, 5});
  auto empty = run_node({"Concat", {Tensor::host(DType::kFloat, {0, 2}), Tensor::host(DType::kFloat, {0, 3})},
                         {Attribute::make_int("axis", 1)}});
  REQUIRE(empty[0].dims() == Dims{0, 5});
  // Shape vectors: the usual PyTorch export of x.view(a, b).
  auto dims = run_node({"Concat", {make<int64_t>({1}, {2}), make<int64_t>({0}, {}), make<int64_t>({2}, {-1, 8})},
                        {Attribute::make_int("axis", 0)}});
  REQUIRE(dims[0].to_int64_vector() == std::vector<int64_t>{2, -1, 8});
  REQUIRE(run_node_error({"Concat", {make<float>({}, {1}), make<float>({}, {2})}, {Attribute::make_int("axis", 0)}})
              .code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Concat", {make<float>({2}, {1, 2}), make<float>({2, 1}, {3, 4})},
                          {Attribute::make_int("axis", 0)}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Concat", {make<float>({2, 2}, {1, 2, 3, 4}), make<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                          {Attribute::make_int("axis", 0)}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Concat", {make<float>({1}, {1}), make<int64_t>({1}, {2})}, {Attribute::make_int("axis", 0)}})
              .code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Concat", {make<float>({1}, {1})}, {Attribute::make_int("axis", 1)}}).code() ==
          ErrorCode::kShape);
}

TEST_CASE("Split: attribute before 13, input from 13, zero-sized parts, every dtype", "[kernels][Split]") {
  auto x = counting_tensor(DType::kInt64, {2, 6});
  auto old = run_node({"Split", {x}, {Attribute::make_int("axis", 1), Attribute::make_ints("split", {1, 0, 5})}, 3, 11});
  REQUIRE(old[0].to_int64_vector() == std::vector<int64_t>{0, 6});
  REQUIRE(old[1].dims() == Dims{2, 0});
  REQUIRE(old[2].to_int64_vector() == std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 9, 10, 11});
  auto eq = run_node({"Split", {x}, {}, 2, 13});
  REQUIRE(eq[0].to_int64_vector() == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  REQUIRE(eq[1].to_int64_vector() == std::vector<int64_t>{6, 7, 8, 9, 10, 11});
  auto b = run_node({"Split", {make<bool>({4}, {true, false, false, true})}, {}, 2, 7});
  REQUIRE(b[1].to_int64_vector() == std::vector<int64_t>{0, 1});
  // The split input may be omitted at 13+: equal parts.
  auto omitted = run_node({"Split", {x, Tensor()}, {Attribute::make_int("axis", -1)}, 3, 13});
  REQUIRE(omitted[2].to_int64_vector() == std::vector<int64_t>{4, 5, 10, 11});
  auto empty = run_node({"Split", {Tensor::host(DType::kFloat, {0, 4})}, {Attribute::make_int("axis", 1)}, 2, 13});
  REQUIRE(empty[1].dims() == Dims{0, 2});
}

TEST_CASE("Split at opset 18: num_outputs with a smaller last chunk", "[kernels][Split]") {
  auto x = counting_tensor(DType::kFloat, {7, 2});
  auto s = run_node({"Split", {x}, {Attribute::make_int("num_outputs", 3)}, 3, 18});
  REQUIRE(s[0].dims() == Dims{3, 2});
  REQUIRE(s[1].dims() == Dims{3, 2});
  REQUIRE(s[2].dims() == Dims{1, 2});
  REQUIRE(s[2].to_int64_vector() == std::vector<int64_t>{12, 13});
  // ceil(5 / 4) = 2 leaves -1 for the last chunk: no valid split.
  REQUIRE(run_node_error({"Split", {counting_tensor(DType::kFloat, {5})}, {Attribute::make_int("num_outputs", 4)}, 4, 18})
              .code() == ErrorCode::kShape);
  // num_outputs must match the node's outputs.
  REQUIRE(run_node_error({"Split", {x}, {Attribute::make_int("num_outputs", 2)}, 3, 18}).code() == ErrorCode::kShape);
}

TEST_CASE("Split errors: uneven before 18, sizes that do not add up, negative sizes, scalars", "[kernels][Split]") {
  auto x = counting_tensor(DType::kFloat, {5});
  REQUIRE(run_node_error({"Split", {x}, {}, 2, 13}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Split", {x, make<int64_t>({2}, {1, 2})}, {}, 2, 13, {1}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Split", {x, make<int64_t>({2}, {6, -1})}, {}, 2, 13, {1}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Split", {make<float>({}, {1})}, {}, 1, 13}).code() == ErrorCode::kShape);
}
