// Slice: the attribute form (before 10) and the input form, negative steps,
// clamping of out-of-range bounds per the spec, empty results and axes, dtypes.
#include <cstdint>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// Slice of x at opset 13 with every parameter an initializer.
std::vector<Tensor> slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends,
                          std::vector<int64_t> axes = {}, std::vector<int64_t> steps = {}) {
  auto vec = [](const std::vector<int64_t>& v) { return make<int64_t>({static_cast<int64_t>(v.size())}, v); };
  NodeSpec spec{"Slice", {x, vec(starts), vec(ends)}, {}, 1, 13, {1, 2}};
  if (!axes.empty() || !steps.empty()) {
    spec.inputs.push_back(axes.empty() ? Tensor() : vec(axes));
    if (!axes.empty()) spec.constant_inputs.push_back(3);
  }
  if (!steps.empty()) {
    spec.inputs.push_back(vec(steps));
    spec.constant_inputs.push_back(4);
  }
  return run_node(spec);
}

}  // namespace

TEST_CASE("Slice with negative steps, clamping and the opset 9 attribute form", "[kernels][Slice]") {
  auto x = make<float>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto r = run_node({"Slice", {x, make<int64_t>({1}, {-1}), make<int64_t>({1}, {-100}), make<int64_t>({1}, {1}),
                               make<int64_t>({1}, {-2})}, {}, 1, 17, {1, 2, 3, 4}});
  require_close(r[0], make<float>({2, 2}, {3, 1, 7, 5}));
  auto c = run_node({"Slice", {x, make<int64_t>({1}, {1}), make<int64_t>({1}, {INT64_MAX})}, {}, 1, 17, {1, 2}});
  require_close(c[0], make<float>({1, 4}, {4, 5, 6, 7}));
  auto old = run_node({"Slice", {x}, {Attribute::make_ints("starts", {1}), Attribute::make_ints("ends", {3}),
                                      Attribute::make_ints("axes", {-1})}, 1, 9});
  require_close(old[0], make<float>({2, 2}, {1, 2, 5, 6}));
}

TEST_CASE("Slice reverses whole axes and steps through several at once", "[kernels][Slice]") {
  auto x = counting_tensor(DType::kInt32, {3, 4});
  auto rev = slice(x, {-1, -1}, {INT64_MIN, INT64_MIN}, {0, 1}, {-1, -1});
  REQUIRE(rev[0].to_int64_vector() == std::vector<int64_t>{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  auto strided = slice(x, {0, 1}, {3, 4}, {}, {2, 2});
  REQUIRE(strided[0].dims() == Dims{2, 2});
  REQUIRE(strided[0].to_int64_vector() == std::vector<int64_t>{1, 3, 9, 11});
  // Steps far longer than the axis take one element, whatever their sign or size.
  REQUIRE(slice(x, {0}, {4}, {1}, {INT64_MAX})[0].to_int64_vector() == std::vector<int64_t>{0, 4, 8});
  REQUIRE(slice(x, {-1}, {INT64_MIN}, {1}, {INT64_MIN})[0].to_int64_vector() == std::vector<int64_t>{3, 7, 11});
}

TEST_CASE("Slice clamps out-of-range starts and ends and may come out empty", "[kernels][Slice]") {
  auto x = counting_tensor(DType::kFloat, {5});
  REQUIRE(slice(x, {-100}, {100})[0].dims() == Dims{5});
  REQUIRE(slice(x, {10}, {100})[0].dims() == Dims{0});      // start past the end
  REQUIRE(slice(x, {3}, {1})[0].dims() == Dims{0});         // end before start, positive step
  REQUIRE(slice(x, {1}, {3}, {0}, {-1})[0].dims() == Dims{0});
  REQUIRE(slice(x, {100}, {-100}, {0}, {-2})[0].to_int64_vector() == std::vector<int64_t>{4, 2, 0});
  // An empty axis stays empty for either step sign.
  auto e = Tensor::host(DType::kBool, {0, 3});
  REQUIRE(slice(e, {0}, {1}, {0}, {-1})[0].dims() == Dims{0, 3});
  REQUIRE(slice(e, {1, 0}, {2, 2}, {1, 0})[0].dims() == Dims{0, 1});
}

TEST_CASE("Slice of every dtype with negative axes", "[kernels][Slice]") {
  for (DType dt : {DType::kDouble, DType::kInt8, DType::kUInt16, DType::kBool, DType::kInt64}) {
    INFO(dtype_name(dt));
    auto x = counting_tensor(dt, {2, 3, 4});
    auto y = slice(x, {1, -3}, {3, -1}, {-2, -1});
    REQUIRE(y[0].dtype() == dt);
    REQUIRE(y[0].dims() == Dims{2, 2, 2});
    auto want = counting_tensor(dt, {24}).to_int64_vector();
    REQUIRE(y[0].to_int64_vector() ==
            std::vector<int64_t>{want[5], want[6], want[9], want[10], want[17], want[18], want[21], want[22]});
  }
}

TEST_CASE("Slice errors: repeated axes, zero step, scalars, mismatched lengths", "[kernels][Slice]") {
  auto x = counting_tensor(DType::kFloat, {4, 4});
  auto vec = [](std::vector<int64_t> v) { return make<int64_t>({static_cast<int64_t>(v.size())}, v); };
  REQUIRE(run_node_error({"Slice", {x, vec({0, 1}), vec({2, 3}), vec({1, -1})}, {}, 1, 13, {1, 2, 3}}).code() ==
          ErrorCode::kInvalidArgument);
  REQUIRE(run_node_error({"Slice", {x, vec({0}), vec({2}), vec({0}), vec({0})}, {}, 1, 13, {1, 2, 3, 4}}).code() ==
          ErrorCode::kInvalidArgument);
  REQUIRE(run_node_error({"Slice", {make<float>({}, {1}), vec({0}), vec({1})}, {}, 1, 13, {1, 2}}).code() ==
          ErrorCode::kShape);
  REQUIRE(run_node_error({"Slice", {x, vec({0, 0}), vec({1})}, {}, 1, 13, {1, 2}}).code() == ErrorCode::kShape);
}

TEST_CASE("Slice bounds fed at run time give the same result", "[kernels][Slice]") {
  auto x = counting_tensor(DType::kInt64, {3, 4});
  // Not initializers: the load-time rule leaves dims unknown, the run-time rule resolves them.
  auto r = run_node({"Slice", {x, make<int32_t>({1}, {-2}), make<int32_t>({1}, {0}), make<int32_t>({1}, {1}),
                               make<int32_t>({1}, {-1})}, {}, 1, 13});
  REQUIRE(r[0].to_int64_vector() == std::vector<int64_t>{2, 1, 6, 5, 10, 9});
}
