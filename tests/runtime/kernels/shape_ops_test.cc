#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("Shape with start/end, Size, Range, ConstantOfShape", "[kernels][Shape][Range][ConstantOfShape]") {
  auto x = Tensor::host(DType::kFloat, {2, 3, 4});
  REQUIRE(run_node({"Shape", {x}})[0].to_int64_vector() == std::vector<int64_t>{2, 3, 4});
  REQUIRE(run_node({"Shape", {x}, {Attribute::make_int("start", -2)}})[0].to_int64_vector() == std::vector<int64_t>{3, 4});
  auto r = run_node({"Range", {make<int64_t>({}, {10}), make<int64_t>({}, {4}), make<int64_t>({}, {-3})}});
  REQUIRE(r[0].to_int64_vector() == std::vector<int64_t>{10, 7});
  auto rf = run_node({"Range", {make<float>({}, {0}), make<float>({}, {1}), make<float>({}, {0.25f})}});
  require_close(rf[0], make<float>({4}, {0, 0.25f, 0.5f, 0.75f}));
  auto c = run_node({"ConstantOfShape", {make<int64_t>({2}, {2, 2})},
                     {Attribute::make_tensor("value", make<int64_t>({1}, {7}))}, 1, 17, {0}});
  REQUIRE(c[0].to_int64_vector() == std::vector<int64_t>{7, 7, 7, 7});
  auto empty = run_node({"ConstantOfShape", {make<int64_t>({2}, {0, 3})}, {}, 1, 17, {0}});
  REQUIRE(empty[0].dims() == Dims{0, 3});
}

TEST_CASE("Reshape with 0 and -1, allowzero, views share storage", "[kernels][Reshape]") {
  auto x = random_tensor({2, 3, 4}, 1);
  auto y = run_node({"Reshape", {x, make<int64_t>({3}, {0, -1, 2})}, {}, 1, 17, {1}});
  REQUIRE(y[0].dims() == Dims{2, 6, 2});
  REQUIRE(y[0].raw() == x.raw());  // no copy
  auto z = run_node({"Reshape", {Tensor::host(DType::kFloat, {0, 3}), make<int64_t>({2}, {3, 0})},
                     {Attribute::make_int("allowzero", 1)}, 1, 17, {1}});
  REQUIRE(z[0].dims() == Dims{3, 0});
  Status st = run_node_error({"Reshape", {x, make<int64_t>({2}, {5, -1})}, {}, 1, 17, {1}});
  REQUIRE(st.code() == ErrorCode::kShape);
}

TEST_CASE("Flatten, Squeeze and Unsqueeze with negative axes across opsets", "[kernels][Flatten][Squeeze][Unsqueeze]") {
  auto x = random_tensor({2, 1, 3}, 2);
  REQUIRE(run_node({"Flatten", {x}, {Attribute::make_int("axis", -1)}})[0].dims() == Dims{2, 3});
  REQUIRE(run_node({"Flatten", {x}, {Attribute::make_int("axis", 0)}})[0].dims() == Dims{1, 6});
  REQUIRE(run_node({"Squeeze", {x, make<int64_t>({1}, {-2})}, {}, 1, 17, {1}})[0].dims() == Dims{2, 3});
  REQUIRE(run_node({"Squeeze", {x}, {Attribute::make_ints("axes", {1})}, 1, 11})[0].dims() == Dims{2, 3});
  REQUIRE(run_node({"Squeeze", {x}})[0].dims() == Dims{2, 3});
  REQUIRE(run_node({"Unsqueeze", {x, make<int64_t>({2}, {0, -1})}, {}, 1, 17, {1}})[0].dims() == Dims{1, 2, 1, 3, 1});
  REQUIRE(run_node({"Unsqueeze", {make<float>({}, {5})}, {Attribute::make_ints("axes", {0})}, 1, 11})[0].dims() == Dims{1});
  REQUIRE(run_node_error({"Squeeze", {x, make<int64_t>({1}, {0})}, {}, 1, 17, {1}}).code() == ErrorCode::kShape);
}

TEST_CASE("Transpose default and explicit perms, and of an empty tensor", "[kernels][Transpose]") {
  auto x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  require_close(run_node({"Transpose", {x}})[0], make<float>({3, 2}, {1, 4, 2, 5, 3, 6}));
  auto y = make<int64_t>({2, 1, 2}, {1, 2, 3, 4});
  auto t = run_node({"Transpose", {y}, {Attribute::make_ints("perm", {2, 0, 1})}});
  REQUIRE(t[0].dims() == Dims{2, 2, 1});
  REQUIRE(t[0].to_int64_vector() == std::vector<int64_t>{1, 3, 2, 4});
  REQUIRE(run_node({"Transpose", {Tensor::host(DType::kFloat, {0, 4})}})[0].dims() == Dims{4, 0});
}

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
