// Trilu (upper/lower, k of any size, batches, dtypes) and CumSum (every axis,
// exclusive and reverse, integer types, axis as int32 or int64).
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Trilu upper/lower with k, CumSum exclusive and reverse", "[kernels][Trilu][CumSum]") {
  auto m = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  require_close(run_node({"Trilu", {m}})[0], make<float>({2, 3}, {1, 2, 3, 0, 5, 6}));
  require_close(run_node({"Trilu", {m, make<int64_t>({}, {-1})}, {Attribute::make_int("upper", 0)}})[0],
                make<float>({2, 3}, {0, 0, 0, 4, 0, 0}));
  auto v = make<float>({4}, {1, 2, 3, 4});
  require_close(run_node({"CumSum", {v, make<int64_t>({}, {0})}})[0], make<float>({4}, {1, 3, 6, 10}));
  require_close(run_node({"CumSum", {v, make<int64_t>({}, {-1})},
                          {Attribute::make_int("exclusive", 1), Attribute::make_int("reverse", 1)}})[0],
                make<float>({4}, {9, 7, 4, 0}));
}

TEST_CASE("Trilu over batches of non-square matrices for every k, against a reference", "[kernels][Trilu]") {
  const int64_t batch = 3, n = 4, m = 6;
  auto x = counting_tensor(DType::kInt64, {batch, n, m});
  auto xv = x.to_int64_vector();
  for (int64_t k : {-5, -1, 0, 2, 7}) {
    for (int64_t upper : {0, 1}) {
      INFO("k " << k << " upper " << upper);
      auto y = run_node({"Trilu", {x, make<int64_t>({}, {k})}, {Attribute::make_int("upper", upper)}});
      auto yv = y[0].to_int64_vector();
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < m; ++j) {
            int64_t at = (b * n + i) * m + j;
            bool keep = upper ? j - i >= k : j - i <= k;
            REQUIRE(yv[at] == (keep ? xv[at] : 0));
          }
    }
  }
}

TEST_CASE("Trilu with extreme k, bool and empty inputs, rank below 2 is an error", "[kernels][Trilu]") {
  auto x = counting_tensor(DType::kFloat, {2, 2});
  REQUIRE(run_node({"Trilu", {x, make<int64_t>({}, {INT64_MAX})}})[0].to_int64_vector() ==
          std::vector<int64_t>{0, 0, 0, 0});
  REQUIRE(run_node({"Trilu", {x, make<int64_t>({}, {INT64_MIN})}})[0].to_int64_vector() ==
          std::vector<int64_t>{0, 1, 2, 3});
  REQUIRE(run_node({"Trilu", {x, make<int64_t>({}, {INT64_MIN})}, {Attribute::make_int("upper", 0)}})[0]
              .to_int64_vector() == std::vector<int64_t>{0, 0, 0, 0});
  auto b = make<bool>({2, 2}, {true, true, true, true});
  REQUIRE(run_node({"Trilu", {b}, {Attribute::make_int("upper", 0)}})[0].to_int64_vector() ==
          std::vector<int64_t>{1, 0, 1, 1});
  REQUIRE(run_node({"Trilu", {Tensor::host(DType::kFloat, {3, 0, 4})}})[0].dims() == Dims{3, 0, 4});
  REQUIRE(run_node({"Trilu", {Tensor::host(DType::kFloat, {3, 4, 0})}})[0].dims() == Dims{3, 4, 0});
  REQUIRE(run_node_error({"Trilu", {make<float>({3}, {1, 2, 3})}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Trilu", {x, make<int64_t>({2}, {0, 1})}}).code() == ErrorCode::kInvalidArgument);
}

TEST_CASE("CumSum along each axis of a 3-D tensor with every flag, against a reference", "[kernels][CumSum]") {
  const Dims dims{3, 5, 70};
  auto x = counting_tensor(DType::kInt64, dims);
  auto xv = x.to_int64_vector();
  for (int64_t axis : {0, 1, 2, -2}) {
    int64_t ax = axis < 0 ? axis + 3 : axis;
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1}) {
        INFO("axis " << axis << " exclusive " << exclusive << " reverse " << reverse);
        auto y = run_node({"CumSum", {x, make<int32_t>({}, {static_cast<int32_t>(axis)})},
                           {Attribute::make_int("exclusive", exclusive), Attribute::make_int("reverse", reverse)}});
        auto yv = y[0].to_int64_vector();
        for (int64_t i = 0; i < dims[0]; ++i)
          for (int64_t j = 0; j < dims[1]; ++j)
            for (int64_t k = 0; k < dims[2]; ++k) {
              int64_t c[3] = {i, j, k}, pos = c[ax], want = 0;
              for (int64_t s = 0; s < dims[ax]; ++s) {
                bool in = reverse ? (exclusive ? s > pos : s >= pos) : (exclusive ? s < pos : s <= pos);
                c[ax] = s;
                if (in) want += xv[(c[0] * dims[1] + c[1]) * dims[2] + c[2]];
              }
              if (yv[(i * dims[1] + j) * dims[2] + k] != want) FAIL("mismatch at " << i << "," << j << "," << k);
            }
      }
  }
}

TEST_CASE("CumSum of integer, double and empty tensors, axis errors", "[kernels][CumSum]") {
  auto i = run_node({"CumSum", {make<int32_t>({2, 2}, {1, 2, 3, 4}), make<int64_t>({1}, {1})}});
  REQUIRE(i[0].dtype() == DType::kInt32);
  REQUIRE(i[0].to_int64_vector() == std::vector<int64_t>{1, 3, 3, 7});
  require_close(run_node({"CumSum", {make<double>({3}, {0.5, 0.25, 0.125}), make<int64_t>({}, {0})}})[0],
                make<double>({3}, {0.5, 0.75, 0.875}));
  auto u = run_node({"CumSum", {make<uint32_t>({3}, {1, 2, 3}), make<int64_t>({}, {0})}, {Attribute::make_int("reverse", 1)}});
  REQUIRE(u[0].to_int64_vector() == std::vector<int64_t>{6, 5, 3});
  REQUIRE(run_node({"CumSum", {Tensor::host(DType::kFloat, {0, 3}), make<int64_t>({}, {1})}})[0].dims() == Dims{0, 3});
  REQUIRE(run_node_error({"CumSum", {make<float>({2}, {1, 2}), make<int64_t>({}, {1})}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"CumSum", {make<float>({}, {1}), make<int64_t>({}, {0})}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"CumSum", {make<float>({2}, {1, 2}), make<int64_t>({0}, {})}}).code() ==
          ErrorCode::kInvalidArgument);
}
