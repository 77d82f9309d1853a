// Expand, Tile and Pad: broadcasting both ways, zero repeats, every pad mode,
// pads as an attribute (before 11) or input, the axes input (18+), crops, dtypes.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Expand, Tile and Pad in every mode", "[kernels][Expand][Tile][Pad]") {
  auto x = make<float>({3, 1}, {1, 2, 3});
  require_close(run_node({"Expand", {x, make<int64_t>({3}, {2, 1, 2})}, {}, 1, 17, {1}})[0],
                make<float>({2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  require_close(run_node({"Tile", {make<float>({2}, {1, 2}), make<int64_t>({1}, {2})}, {}, 1, 17, {1}})[0],
                make<float>({4}, {1, 2, 1, 2}));
  auto v = make<float>({3}, {1, 2, 3});
  auto pads = make<int64_t>({2}, {2, 1});
  auto pad = [&](const char* mode) {
    return run_node({"Pad", {v, pads}, {Attribute::make_string("mode", mode)}, 1, 17, {1}})[0];
  };
  require_close(pad("constant"), make<float>({6}, {0, 0, 1, 2, 3, 0}));
  require_close(pad("reflect"), make<float>({6}, {3, 2, 1, 2, 3, 2}));
  require_close(pad("edge"), make<float>({6}, {1, 1, 1, 2, 3, 3}));
  require_close(run_node({"Pad", {v, pads}, {Attribute::make_string("mode", "wrap")}, 1, 19, {1}})[0],
                make<float>({6}, {2, 3, 1, 2, 3, 1}));
  // Negative pads crop.
  require_close(run_node({"Pad", {v, make<int64_t>({2}, {-1, 0})}, {}, 1, 17, {1}})[0], make<float>({2}, {2, 3}));
}

TEST_CASE("Expand broadcasts both ways, from scalars, into empty shapes, for every dtype", "[kernels][Expand]") {
  for (DType dt : {DType::kFloat, DType::kInt64, DType::kBool, DType::kInt8, DType::kDouble}) {
    INFO(dtype_name(dt));
    auto x = counting_tensor(dt, {3, 1});
    auto xv = x.to_int64_vector();
    // The target may be shorter than the input and hold 1s where the input is larger.
    auto y = run_node({"Expand", {x, make<int64_t>({2}, {1, 4})}, {}, 1, 13, {1}});
    REQUIRE(y[0].dtype() == dt);
    REQUIRE(y[0].dims() == Dims{3, 4});
    REQUIRE(y[0].to_int64_vector() ==
            std::vector<int64_t>{xv[0], xv[0], xv[0], xv[0], xv[1], xv[1], xv[1], xv[1], xv[2], xv[2], xv[2], xv[2]});
  }
  auto s = run_node({"Expand", {make<int32_t>({}, {9}), make<int64_t>({2}, {2, 2})}, {}, 1, 8, {1}});
  REQUIRE(s[0].to_int64_vector() == std::vector<int64_t>{9, 9, 9, 9});
  REQUIRE(run_node({"Expand", {make<float>({1}, {1}), make<int64_t>({2}, {0, 1})}, {}, 1, 13, {1}})[0].dims() ==
          Dims{0, 1});
  REQUIRE(run_node({"Expand", {make<float>({}, {1}), make<int64_t>({0}, {})}, {}, 1, 13, {1}})[0].dims() == Dims{});
  REQUIRE(run_node_error({"Expand", {make<float>({2}, {1, 2}), make<int64_t>({1}, {3})}, {}, 1, 13, {1}}).code() ==
          ErrorCode::kShape);
}

TEST_CASE("Expand of a large middle-broadcast tensor matches a reference", "[kernels][Expand]") {
  auto x = counting_tensor(DType::kFloat, {4, 1, 300});
  auto y = run_node({"Expand", {x, make<int64_t>({3}, {4, 50, 300})}, {}, 1, 13, {1}});
  const float* in = x.data<float>();
  const float* out = y[0].data<float>();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 50; ++j)
      for (int64_t k = 0; k < 300; ++k)
        if (out[(i * 50 + j) * 300 + k] != in[i * 300 + k]) FAIL("mismatch at " << i << "," << j << "," << k);
}

TEST_CASE("Expand's rule keeps the rank when only the target's length is known", "[kernels][Expand][shape_inference]") {
  Model m = single_node_model({"Expand", {make<float>({3, 1}, {1, 2, 3}), make<int64_t>({3}, {2, 3, 4})}});
  REQUIRE(infer_shapes(m).ok());
  // 3 cannot change (a valid target holds 1 or 3 there); the others depend on the target's values.
  REQUIRE(shape_to_string(m.graph.value("out0")->shape) == "[?,3,?]");
}

TEST_CASE("Tile repeats every axis, zero repeats empty it, every dtype", "[kernels][Tile]") {
  for (DType dt : {DType::kFloat, DType::kInt64, DType::kBool, DType::kUInt8}) {
    INFO(dtype_name(dt));
    auto x = counting_tensor(dt, {2, 3});
    auto v = x.to_int64_vector();
    auto y = run_node({"Tile", {x, make<int64_t>({2}, {2, 2})}, {}, 1, 13, {1}});
    REQUIRE(y[0].dims() == Dims{4, 6});
    std::vector<int64_t> want;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) want.push_back(v[(i % 2) * 3 + j % 3]);
    REQUIRE(y[0].to_int64_vector() == want);
  }
  REQUIRE(run_node({"Tile", {counting_tensor(DType::kFloat, {2, 3}), make<int64_t>({2}, {0, 2})}, {}, 1, 13, {1}})[0]
              .dims() == Dims{0, 6});
  REQUIRE(run_node({"Tile", {Tensor::host(DType::kFloat, {0, 3}), make<int64_t>({2}, {3, 1})}, {}, 1, 13, {1}})[0]
              .dims() == Dims{0, 3});
  REQUIRE(run_node({"Tile", {make<double>({}, {2}), make<int64_t>({0}, {})}, {}, 1, 13, {1}})[0].dims() == Dims{});
  REQUIRE(run_node_error({"Tile", {make<float>({2}, {1, 2}), make<int64_t>({2}, {1, 1})}, {}, 1, 13, {1}}).code() ==
          ErrorCode::kShape);
  // Repeats fed at run time.
  auto r = run_node({"Tile", {make<int32_t>({1, 2}, {5, 6}), make<int64_t>({2}, {2, 1})}, {}, 1, 13});
  REQUIRE(r[0].to_int64_vector() == std::vector<int64_t>{5, 6, 5, 6});
}

TEST_CASE("Tile of a large tensor matches a reference", "[kernels][Tile]") {
  auto x = counting_tensor(DType::kInt32, {3, 7, 20});
  auto y = run_node({"Tile", {x, make<int64_t>({3}, {2, 40, 3})}, {}, 1, 13, {1}});
  REQUIRE(y[0].dims() == Dims{6, 280, 60});
  const int32_t* in = x.data<int32_t>();
  const int32_t* out = y[0].data<int32_t>();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 280; ++j)
      for (int64_t k = 0; k < 60; ++k)
        if (out[(i * 280 + j) * 60 + k] != in[((i % 3) * 7 + j % 7) * 20 + k % 20])
          FAIL("mismatch at " << i << "," << j << "," << k);
}

TEST_CASE("Pad constant in 2-D with a constant_value, crops and every dtype", "[kernels][Pad]") {
  auto x = counting_tensor(DType::kInt64, {2, 3});  // 0 1 2 / 3 4 5
  // [begin0, begin1, end0, end1]: one row above, crop a column on the left, two columns on the right.
  auto y = run_node({"Pad", {x, make<int64_t>({4}, {1, -1, 0, 2}), make<int64_t>({}, {-7})}, {}, 1, 13, {1}});
  REQUIRE(y[0].dims() == Dims{3, 4});
  REQUIRE(y[0].to_int64_vector() == std::vector<int64_t>{-7, -7, -7, -7, 1, 2, -7, -7, 4, 5, -7, -7});
  for (DType dt : {DType::kFloat, DType::kBool, DType::kInt8, DType::kUInt16, DType::kDouble}) {
    INFO(dtype_name(dt));
    auto p = run_node({"Pad", {counting_tensor(dt, {1, 2}), make<int64_t>({4}, {0, 1, 1, 0})}, {}, 1, 13, {1}});
    REQUIRE(p[0].dtype() == dt);
    REQUIRE(p[0].to_int64_vector() == std::vector<int64_t>{0, 0, 1, 0, 0, 0});
  }
  // Cropping everything leaves an empty tensor; padding an empty one fills it.
  REQUIRE(run_node({"Pad", {x, make<int64_t>({4}, {0, -3, 0, 0})}, {}, 1, 13, {1}})[0].dims() == Dims{2, 0});
  auto filled = run_node({"Pad", {Tensor::host(DType::kFloat, {0, 2}), make<int64_t>({4}, {1, 0, 0, 0}),
                                  make<float>({}, {2.5f})}, {}, 1, 13, {1}});
  require_close(filled[0], make<float>({1, 2}, {2.5f, 2.5f}));
  // The constant's dtype must be the data's.
  REQUIRE(run_node_error({"Pad", {x, make<int64_t>({4}, {0, 0, 0, 1}), make<float>({}, {1})}, {}, 1, 13, {1}}).code() ==
          ErrorCode::kInvalidArgument);
}

TEST_CASE("Pad before opset 11 takes pads and value as attributes", "[kernels][Pad]") {
  auto x = make<float>({2}, {1, 2});
  auto y = run_node({"Pad", {x}, {Attribute::make_ints("pads", {1, 2}), Attribute::make_float("value", 9.f)}, 1, 2});
  require_close(y[0], make<float>({5}, {9, 1, 2, 9, 9}));
  auto e = run_node({"Pad", {make<double>({2}, {1, 2})}, {Attribute::make_ints("pads", {0, 2}),
                                                         Attribute::make_string("mode", "edge")}, 1, 10});
  require_close(e[0], make<double>({4}, {1, 2, 2, 2}));
}

TEST_CASE("Pad with the axes input (opset 18), negative axes", "[kernels][Pad]") {
  auto x = counting_tensor(DType::kFloat, {2, 2});  // 0 1 / 2 3
  auto y = run_node({"Pad", {x, make<int64_t>({2}, {1, 1}), Tensor(), make<int64_t>({1}, {-1})},
                     {Attribute::make_string("mode", "edge")}, 1, 18, {1, 3}});
  require_close(y[0], make<float>({2, 4}, {0, 0, 1, 1, 2, 2, 3, 3}));
  REQUIRE(run_node_error({"Pad", {x, make<int64_t>({4}, {1, 1, 1, 1}), Tensor(), make<int64_t>({1}, {0})}, {}, 1, 18,
                          {1, 3}}).code() == ErrorCode::kShape);
}

TEST_CASE("Pad reflect, edge and wrap wider than the axis, in 2-D", "[kernels][Pad]") {
  auto v = make<float>({3}, {1, 2, 3});
  auto wide = [&](const char* mode) {
    return run_node({"Pad", {v, make<int64_t>({2}, {5, 4})}, {Attribute::make_string("mode", mode)}, 1, 19, {1}})[0];
  };
  // numpy.pad's results for the same widths.
  require_close(wide("reflect"), make<float>({12}, {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3}));
  require_close(wide("wrap"), make<float>({12}, {2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1}));
  require_close(wide("edge"), make<float>({12}, {1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3}));
  auto m = counting_tensor(DType::kInt32, {2, 3});  // 0 1 2 / 3 4 5
  auto r = run_node({"Pad", {m, make<int64_t>({4}, {1, 1, 0, 0})}, {Attribute::make_string("mode", "reflect")}, 1, 13, {1}});
  REQUIRE(r[0].to_int64_vector() == std::vector<int64_t>{4, 3, 4, 5, 1, 0, 1, 2, 4, 3, 4, 5});
  REQUIRE(run_node_error({"Pad", {Tensor::host(DType::kFloat, {0}), make<int64_t>({2}, {1, 0})},
                          {Attribute::make_string("mode", "edge")}, 1, 13, {1}}).code() == ErrorCode::kInvalidArgument);
  REQUIRE(run_node_error({"Pad", {v, make<int64_t>({2}, {1, 0})}, {Attribute::make_string("mode", "mirror")}, 1, 13,
                          {1}}).code() == ErrorCode::kInvalidArgument);
}
