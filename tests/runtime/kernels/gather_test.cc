// Gather and GatherElements: negative indices and axes, int32/int64 indices,
// scalar and empty indices, every data dtype, and references on larger inputs.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Gather with negative indices and axes, GatherElements, out of range is an error", "[kernels][Gather][GatherElements]") {
  auto x = make<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  require_close(run_node({"Gather", {x, make<int64_t>({2}, {-1, 0})}})[0], make<float>({2, 2}, {5, 6, 1, 2}));
  require_close(run_node({"Gather", {x, make<int64_t>({}, {1})}, {Attribute::make_int("axis", -1)}})[0],
                make<float>({3}, {2, 4, 6}));
  auto ge = run_node({"GatherElements", {x, make<int64_t>({1, 2}, {2, 0})}});
  require_close(ge[0], make<float>({1, 2}, {5, 2}));
  Status st = run_node_error({"Gather", {x, make<int64_t>({1}, {3})}});
  REQUIRE_THAT(st.message(), Catch::Contains("out of range"));
}

TEST_CASE("Gather of rows like an embedding table, against a reference", "[kernels][Gather]") {
  auto table = random_tensor({50, 96}, 5);
  std::vector<int32_t> ids;
  for (int i = 0; i < 4 * 300; ++i) ids.push_back((i * 37) % 100 - 50);  // negatives count from the end
  auto y = run_node({"Gather", {table, make<int32_t>({4, 300}, ids)}});
  REQUIRE(y[0].dims() == Dims{4, 300, 96});
  const float* t = table.data<float>();
  const float* o = y[0].data<float>();
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t row = ids[i] < 0 ? ids[i] + 50 : ids[i];
    for (int64_t k = 0; k < 96; ++k)
      if (o[i * 96 + k] != t[row * 96 + k]) FAIL("mismatch at id " << i << ", column " << k);
  }
}

TEST_CASE("Gather along an inner axis, of every dtype, with scalar and empty indices", "[kernels][Gather]") {
  for (DType dt : {DType::kFloat, DType::kInt64, DType::kBool, DType::kInt8, DType::kUInt16, DType::kDouble}) {
    INFO(dtype_name(dt));
    auto x = counting_tensor(dt, {2, 3, 2});
    auto all = counting_tensor(dt, {12}).to_int64_vector();
    auto y = run_node({"Gather", {x, make<int64_t>({2}, {2, -3})}, {Attribute::make_int("axis", 1)}});
    REQUIRE(y[0].dtype() == dt);
    REQUIRE(y[0].dims() == Dims{2, 2, 2});
    REQUIRE(y[0].to_int64_vector() == std::vector<int64_t>{all[4], all[5], all[0], all[1], all[10], all[11], all[6], all[7]});
    auto s = run_node({"Gather", {x, make<int32_t>({}, {-1})}, {Attribute::make_int("axis", -1)}});
    REQUIRE(s[0].dims() == Dims{2, 3});
    REQUIRE(s[0].to_int64_vector() == std::vector<int64_t>{all[1], all[3], all[5], all[7], all[9], all[11]});
    REQUIRE(run_node({"Gather", {x, make<int64_t>({0}, {})}, {Attribute::make_int("axis", 2)}})[0].dims() ==
            Dims{2, 3, 0});
  }
  // A scalar out of a shape vector: Gather(Shape(x), 0) in exported graphs.
  auto d = run_node({"Gather", {make<int64_t>({3}, {8, 16, 32}), make<int64_t>({}, {0})}});
  REQUIRE(d[0].dims() == Dims{});
  REQUIRE(d[0].to_int64_vector() == std::vector<int64_t>{8});
  // Empty data with empty indices.
  REQUIRE(run_node({"Gather", {Tensor::host(DType::kFloat, {0, 4}), make<int64_t>({0}, {})}})[0].dims() == Dims{0, 4});
}

TEST_CASE("Gather errors: scalar data, float indices, index below -n", "[kernels][Gather]") {
  auto x = make<float>({3}, {1, 2, 3});
  REQUIRE(run_node_error({"Gather", {make<float>({}, {1}), make<int64_t>({}, {0})}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Gather", {x, make<float>({1}, {0})}}).code() == ErrorCode::kInvalidArgument);
  REQUIRE_THAT(run_node_error({"Gather", {x, make<int64_t>({1}, {-4})}}).message(), Catch::Contains("Gather_node"));
}

TEST_CASE("GatherElements on every axis of a 3-D tensor, against a reference", "[kernels][GatherElements]") {
  const Dims data_dims{4, 5, 6};
  auto x = counting_tensor(DType::kInt64, data_dims);
  auto xv = x.to_int64_vector();
  for (int64_t axis : {0, 1, 2, -1}) {
    INFO("axis " << axis);
    int64_t ax = axis < 0 ? axis + 3 : axis;
    // Indices smaller than the data off the axis, longer than it along the axis.
    Dims id{3, 4, 5};
    id[ax] = 7;
    int64_t n = data_dims[ax];
    std::vector<int32_t> idx;
    for (int64_t i = 0; i < num_elements(id); ++i) idx.push_back(static_cast<int32_t>((i * 7) % (2 * n) - n));
    auto y = run_node({"GatherElements", {x, make<int32_t>(id, idx)}, {Attribute::make_int("axis", axis)}});
    REQUIRE(y[0].dims() == id);
    auto yv = y[0].to_int64_vector();
    for (int64_t i = 0; i < id[0]; ++i)
      for (int64_t j = 0; j < id[1]; ++j)
        for (int64_t k = 0; k < id[2]; ++k) {
          int64_t flat = (i * id[1] + j) * id[2] + k;
          int64_t c[3] = {i, j, k};
          c[ax] = idx[flat] < 0 ? idx[flat] + n : idx[flat];
          if (yv[flat] != xv[(c[0] * 5 + c[1]) * 6 + c[2]]) FAIL("mismatch at " << i << "," << j << "," << k);
        }
  }
}

TEST_CASE("GatherElements: bool data, empty indices, and its errors", "[kernels][GatherElements]") {
  auto b = make<bool>({2, 2}, {true, false, false, true});
  auto y = run_node({"GatherElements", {b, make<int64_t>({2, 2}, {1, 1, 0, 0})}, {Attribute::make_int("axis", 1)}});
  REQUIRE(y[0].to_int64_vector() == std::vector<int64_t>{0, 0, 0, 0});
  REQUIRE(run_node({"GatherElements", {b, make<int64_t>({0, 2}, {})}})[0].dims() == Dims{0, 2});
  REQUIRE(run_node_error({"GatherElements", {b, make<int64_t>({2, 2}, {0, 2, 0, 0})}, {Attribute::make_int("axis", 1)}})
              .code() == ErrorCode::kInvalidArgument);
  REQUIRE(run_node_error({"GatherElements", {b, make<int64_t>({2}, {0, 0})}}).code() == ErrorCode::kShape);
  // Off the axis, indices may not reach past the data.
  REQUIRE(run_node_error({"GatherElements", {b, make<int64_t>({1, 3}, {0, 0, 0})}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"GatherElements", {make<float>({}, {1}), make<int64_t>({}, {0})}}).code() ==
          ErrorCode::kShape);
}
