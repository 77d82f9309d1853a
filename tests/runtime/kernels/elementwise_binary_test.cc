#include <limits>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Add broadcasts a row over a matrix", "[kernels][Add]") {
  auto out = run_node({"Add", {make<float>({2, 3}, {1, 2, 3, 4, 5, 6}), make<float>({3}, {10, 20, 30})}});
  require_close(out[0], make<float>({2, 3}, {11, 22, 33, 14, 25, 36}));
}

TEST_CASE("Sub broadcasts a column and a scalar tensor", "[kernels][Sub]") {
  auto out = run_node({"Sub", {make<float>({2, 1}, {1, 2}), make<float>({1, 3}, {1, 2, 3})}});
  require_close(out[0], make<float>({2, 3}, {0, -1, -2, 1, 0, -1}));
  auto s = run_node({"Mul", {make<float>({}, {2}), make<float>({2}, {3, 4})}});
  require_close(s[0], make<float>({2}, {6, 8}));
}

TEST_CASE("Div on int64 truncates, Pow mixes dtypes", "[kernels][Div][Pow]") {
  auto d = run_node({"Div", {make<int64_t>({3}, {7, -7, 9}), make<int64_t>({3}, {2, 2, 3})}});
  REQUIRE(d[0].to_int64_vector() == std::vector<int64_t>{3, -3, 3});
  auto p = run_node({"Pow", {make<float>({3}, {2, 3, 4}), make<int64_t>({1}, {2})}});
  require_close(p[0], make<float>({3}, {4, 9, 16}));
}

// The lowest value divided by -1 overflows: C++ traps (SIGFPE) where numpy
// wraps. Also as constants, which the passes fold while a model loads.
TEST_CASE("Div and Mod of the lowest integer by -1 wrap instead of trapping", "[kernels][Div][Mod]") {
  const int64_t lo64 = std::numeric_limits<int64_t>::min();
  const int32_t lo32 = std::numeric_limits<int32_t>::min();
  auto d = run_node({"Div", {make<int64_t>({3}, {lo64, lo64, 5}), make<int64_t>({3}, {-1, 0, -1})}});
  REQUIRE(d[0].to_int64_vector() == std::vector<int64_t>{lo64, 0, -5});
  auto d32 = run_node({"Div", {make<int32_t>({2}, {lo32, 6}), make<int32_t>({2}, {-1, -1})}});
  REQUIRE(d32[0].to_int64_vector() == std::vector<int64_t>{lo32, -6});
  auto m = run_node({"Mod", {make<int64_t>({2}, {lo64, 7}), make<int64_t>({2}, {-1, -1})}});
  REQUIRE(m[0].to_int64_vector() == std::vector<int64_t>{0, 0});
  // Folded as constants by the passes while a model loads.
  NodeSpec folded{"Div", {make<int32_t>({1}, {lo32}), make<int32_t>({1}, {-1})}};
  folded.constant_inputs = {0, 1};
  REQUIRE(run_node(folded)[0].to_int64_vector() == std::vector<int64_t>{lo32});
}

// An integer power past its type: a plain cast of the double result is
// undefined (found by fuzz_model_execution); it saturates as Cast does.
TEST_CASE("Integer Pow past its type saturates", "[kernels][Pow]") {
  const int64_t hi64 = std::numeric_limits<int64_t>::max(), lo64 = std::numeric_limits<int64_t>::min();
  auto p = run_node({"Pow", {make<int64_t>({4}, {20, -19, 3, 2}), make<int64_t>({4}, {20, 19, 4, 62})}});
  REQUIRE(p[0].to_int64_vector() == std::vector<int64_t>{hi64, lo64, 81, int64_t{1} << 62});
  auto p32 = run_node({"Pow", {make<int32_t>({2}, {10, 10}), make<int32_t>({2}, {12, 2})}});
  REQUIRE(p32[0].to_int64_vector() == std::vector<int64_t>{std::numeric_limits<int32_t>::max(), 100});
}

TEST_CASE("Empty tensors broadcast to empty outputs", "[kernels][Add]") {
  auto out = run_node({"Add", {Tensor::host(DType::kFloat, {0, 3}), make<float>({3}, {1, 2, 3})}});
  REQUIRE(out[0].dims() == Dims{0, 3});
}

TEST_CASE("Comparisons and logic give bool", "[kernels][Less][And]") {
  auto l = run_node({"Less", {make<float>({3}, {1, 5, 3}), make<float>({1}, {3})}});
  REQUIRE(l[0].dtype() == DType::kBool);
  REQUIRE(l[0].to_int64_vector() == std::vector<int64_t>{1, 0, 0});
  auto a = run_node({"And", {make<bool>({2}, {true, true}), make<bool>({2}, {true, false})}});
  REQUIRE(a[0].to_int64_vector() == std::vector<int64_t>{1, 0});
}

TEST_CASE("Variadic Max/Sum/Mean broadcast across all inputs", "[kernels][Max][Sum][Mean]") {
  auto x = make<float>({2, 2}, {1, 5, 3, 0});
  auto y = make<float>({2}, {2, 2});
  auto z = make<float>({1}, {4});
  require_close(run_node({"Max", {x, y, z}})[0], make<float>({2, 2}, {4, 5, 4, 4}));
  require_close(run_node({"Sum", {x, y, z}})[0], make<float>({2, 2}, {7, 11, 9, 6}));
  require_close(run_node({"Mean", {x, y}})[0], make<float>({2, 2}, {1.5, 3.5, 2.5, 1}));
}

TEST_CASE("Where selects with a broadcast condition", "[kernels][Where]") {
  auto out = run_node({"Where", {make<bool>({2, 1}, {true, false}), make<float>({2, 2}, {1, 2, 3, 4}),
                                 make<float>({}, {-1})}});
  require_close(out[0], make<float>({2, 2}, {1, 2, -1, -1}));
}

TEST_CASE("Mismatched broadcast dims are a shape error naming the node", "[kernels][Add]") {
  Status st = run_node_error({"Add", {make<float>({2, 3}, {1, 2, 3, 4, 5, 6}), make<float>({2}, {1, 2})}});
  REQUIRE(st.code() == ErrorCode::kShape);
  REQUIRE_THAT(st.message(), Catch::Contains("Add_node"));
}
