// Shape, Size, Constant, ConstantOfShape, Range, Identity; and the load-time
// values of the shape arithmetic exporters emit, through the layout ops' own kernels.
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

TEST_CASE("Shape clamps start and end, of scalars and empty tensors", "[kernels][Shape]") {
  auto x = Tensor::host(DType::kBool, {2, 0, 4});
  REQUIRE(run_node({"Shape", {x}})[0].to_int64_vector() == std::vector<int64_t>{2, 0, 4});
  REQUIRE(run_node({"Shape", {x}, {Attribute::make_int("start", -10), Attribute::make_int("end", 10)}, 1, 15})[0]
              .to_int64_vector() == std::vector<int64_t>{2, 0, 4});
  REQUIRE(run_node({"Shape", {x}, {Attribute::make_int("start", 1), Attribute::make_int("end", -1)}, 1, 15})[0]
              .to_int64_vector() == std::vector<int64_t>{0});
  REQUIRE(run_node({"Shape", {x}, {Attribute::make_int("start", 2), Attribute::make_int("end", 1)}, 1, 15})[0]
              .dims() == Dims{0});
  auto s = run_node({"Shape", {make<float>({}, {1})}});
  REQUIRE(s[0].dtype() == DType::kInt64);
  REQUIRE(s[0].dims() == Dims{0});
  auto n = run_node({"Size", {x}});
  REQUIRE(n[0].dims() == Dims{});
  REQUIRE(n[0].to_int64_vector() == std::vector<int64_t>{0});
}

TEST_CASE("Constant from each of its attributes", "[kernels][Constant]") {
  auto constant = [](Attribute a) { return run_node({"Constant", {}, {std::move(a)}})[0]; };
  REQUIRE(constant(Attribute::make_tensor("value", make<int32_t>({2}, {3, 4}))).to_int64_vector() ==
          std::vector<int64_t>{3, 4});
  auto f = constant(Attribute::make_float("value_float", 1.5f));
  REQUIRE(f.dtype() == DType::kFloat);
  REQUIRE(f.dims() == Dims{});
  Attribute floats;
  floats.name = "value_floats";
  floats.type = Attribute::Type::kFloats;
  floats.floats = {1.f, 2.f};
  require_close(constant(floats), make<float>({2}, {1, 2}));
  auto i = constant(Attribute::make_int("value_int", -3));
  REQUIRE(i.dtype() == DType::kInt64);
  REQUIRE(i.dims() == Dims{});
  REQUIRE(i.to_int64_vector() == std::vector<int64_t>{-3});
  REQUIRE(constant(Attribute::make_ints("value_ints", {5, 6, 7})).dims() == Dims{3});
  REQUIRE(run_node_error({"Constant", {}, {Attribute::make_string("value_string", "a")}}).code() ==
          ErrorCode::kUnsupported);
}

TEST_CASE("ConstantOfShape: default float zeros, any value dtype, scalar output, shape fed at run time",
          "[kernels][ConstantOfShape]") {
  auto z = run_node({"ConstantOfShape", {make<int64_t>({2}, {2, 3})}, {}, 1, 9, {0}});
  require_close(z[0], make<float>({2, 3}, {0, 0, 0, 0, 0, 0}));
  auto b = run_node({"ConstantOfShape", {make<int64_t>({1}, {3})},
                     {Attribute::make_tensor("value", make<bool>({1}, {true}))}, 1, 20, {0}});
  REQUIRE(b[0].dtype() == DType::kBool);
  REQUIRE(b[0].to_int64_vector() == std::vector<int64_t>{1, 1, 1});
  auto s = run_node({"ConstantOfShape", {make<int64_t>({0}, {})},
                     {Attribute::make_tensor("value", make<double>({1}, {0.5}))}, 1, 20, {0}});
  REQUIRE(s[0].dims() == Dims{});
  REQUIRE(s[0].to_double_vector() == std::vector<double>{0.5});
  // A large fill, and the shape as a run-time input.
  auto big = run_node({"ConstantOfShape", {make<int64_t>({2}, {300, 400})},
                       {Attribute::make_tensor("value", make<int16_t>({1}, {-2}))}, 1, 20});
  REQUIRE(big[0].dims() == Dims{300, 400});
  for (int16_t v : big[0].span<int16_t>())
    if (v != -2) FAIL("wrong fill value " << v);
  REQUIRE(run_node_error({"ConstantOfShape", {make<int64_t>({1}, {-1})}, {}, 1, 20, {0}}).code() == ErrorCode::kShape);
}

TEST_CASE("Range of integer and float types, empty and negative ranges", "[kernels][Range]") {
  auto range = [](Tensor s, Tensor l, Tensor d) { return run_node({"Range", {s, l, d}})[0]; };
  auto i32 = range(make<int32_t>({}, {-2}), make<int32_t>({}, {7}), make<int32_t>({}, {3}));
  REQUIRE(i32.dtype() == DType::kInt32);
  REQUIRE(i32.to_int64_vector() == std::vector<int64_t>{-2, 1, 4});
  REQUIRE(range(make<int64_t>({}, {5}), make<int64_t>({}, {5}), make<int64_t>({}, {1})).dims() == Dims{0});
  REQUIRE(range(make<int64_t>({}, {5}), make<int64_t>({}, {9}), make<int64_t>({}, {-1})).dims() == Dims{0});
  // Exact for integers beyond double's 53 bits.
  auto big = range(make<int64_t>({}, {(int64_t{1} << 60) + 1}), make<int64_t>({}, {(int64_t{1} << 60) + 4}),
                   make<int64_t>({}, {1}));
  REQUIRE(big.dims() == Dims{3});
  require_close(range(make<double>({}, {1}), make<double>({}, {0}), make<double>({}, {-0.375})),
                make<double>({3}, {1, 0.625, 0.25}));
  REQUIRE(run_node_error({"Range", {make<int64_t>({}, {0}), make<int64_t>({}, {3}), make<int64_t>({}, {0})}}).code() ==
          ErrorCode::kInvalidArgument);
  REQUIRE(run_node_error({"Range", {make<int64_t>({}, {0}), make<int32_t>({}, {3}), make<int64_t>({}, {1})}}).code() ==
          ErrorCode::kInvalidArgument);
}

TEST_CASE("Identity aliases its input, of any dtype and rank", "[kernels][Identity]") {
  for (DType dt : {DType::kFloat, DType::kBool, DType::kUInt64}) {
    auto x = counting_tensor(dt, {2, 3});
    auto y = run_node({"Identity", {x}});
    REQUIRE(y[0].dtype() == dt);
    REQUIRE(y[0].raw() == x.raw());
  }
  REQUIRE(run_node({"Identity", {make<int8_t>({}, {-1})}})[0].dims() == Dims{});
}

TEST_CASE("Exported shape arithmetic through every layout op resolves at load time", "[kernels][shape_inference]") {
  // Small values whose inputs are all known are computed at load time by running the op's
  // own kernel (runtime/constant_folding.cc), so no rule needs value code of its own. Each
  // op of these chains must produce its value for the final shapes to come out concrete.
  Model m;
  m.opset_imports = {{"", 18}};
  Graph& g = m.graph;
  g.inputs.push_back({"x", DType::kFloat, Shape{Dim(2), Dim(3), Dim(4), Dim(5)}, ""});
  auto init = [&](const std::string& name, Tensor t) { g.initializers[name] = std::move(t); };
  init("zero", make<int64_t>({}, {0}));
  init("one", make<int64_t>({}, {1}));
  init("ten", make<int64_t>({}, {10}));
  init("one_vec", make<int64_t>({1}, {1}));
  init("three_vec", make<int64_t>({1}, {3}));
  init("two_vec", make<int64_t>({1}, {2}));
  init("minus1", make<int64_t>({1}, {-1}));
  init("pads", make<int64_t>({2}, {0, 1}));
  init("last", make<int64_t>({1}, {3}));
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out,
                  std::vector<Attribute> attrs = {}) {
    g.nodes.push_back({out + "_node", op, "", std::move(in), {out}, std::move(attrs), ""});
  };
  auto axis0 = [] { return std::vector<Attribute>{Attribute::make_int("axis", 0)}; };
  node("Shape", {"x"}, "s");                                   // [2, 3, 4, 5]
  node("Gather", {"s", "zero"}, "batch");                      // 2
  node("Unsqueeze", {"batch", "zero"}, "batch_vec");           // [2]
  node("Squeeze", {"batch_vec", "zero"}, "batch_again");       // 2
  node("Range", {"zero", "batch_again", "one"}, "r");          // [0, 1]
  node("Shape", {"r"}, "r_len");                               // [2]
  node("Tile", {"minus1", "one_vec"}, "rest");                 // [-1]
  node("Concat", {"r_len", "rest"}, "target", axis0());        // [2, -1]
  node("Reshape", {"x", "target"}, "y");                       // [2, 60]
  node("Slice", {"s", "one_vec", "three_vec"}, "mid");         // [3, 4]
  node("Transpose", {"mid"}, "mid_t");                         // [3, 4]
  node("Pad", {"mid_t", "pads", "ten"}, "padded");             // [3, 4, 10]
  node("Reshape", {"x", "padded"}, "y2");                      // [3, 4, 10]
  node("CumSum", {"mid", "zero"}, "sums");                     // [3, 7]
  node("GatherElements", {"s", "last"}, "w");                  // [5]
  node("Concat", {"sums", "w"}, "target3", axis0());           // [3, 7, 5]
  node("ConstantOfShape", {"target3"}, "y3");
  node("Expand", {"batch", "two_vec"}, "pair");                // [2, 2]
  node("Split", {"pair"}, "half", {Attribute::make_int("num_outputs", 1)});
  node("ConstantOfShape", {"half"}, "y4");
  for (const char* out : {"y", "y2", "y3", "y4"}) g.outputs.push_back({out, DType::kUndefined, std::nullopt, ""});
  Status st = infer_shapes(m);
  INFO(st.message());
  REQUIRE(st.ok());
  REQUIRE(shape_to_string(g.value("y")->shape) == "[2,60]");
  REQUIRE(shape_to_string(g.value("y2")->shape) == "[3,4,10]");
  REQUIRE(shape_to_string(g.value("y3")->shape) == "[3,7,5]");
  REQUIRE(shape_to_string(g.value("y4")->shape) == "[2,2]");
}
