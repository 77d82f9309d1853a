// The view ops: Reshape, Flatten, Squeeze, Unsqueeze share the input's storage;
// their rules resolve -1 and 0 even over symbolic dims.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// The shape inference gives out0 of a one-node model whose input 0 has `in` as its declared shape.
std::string inferred_shape(NodeSpec spec, const Shape& in) {
  Model m = single_node_model(spec);
  m.graph.inputs[0].shape = in;
  Status st = infer_shapes(m);
  INFO(st.message());
  REQUIRE(st.ok());
  return shape_to_string(m.graph.value("out0")->shape);
}

}  // namespace

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

TEST_CASE("Reshape of scalars, empty tensors and every dtype, opset 5 has no allowzero", "[kernels][Reshape]") {
  auto s = run_node({"Reshape", {make<int32_t>({}, {7}), make<int64_t>({1}, {-1})}, {}, 1, 17, {1}});
  REQUIRE(s[0].dims() == Dims{1});
  REQUIRE(s[0].to_int64_vector() == std::vector<int64_t>{7});
  auto back = run_node({"Reshape", {make<bool>({1, 1}, {true}), make<int64_t>({0}, {})}, {}, 1, 17, {1}});
  REQUIRE(back[0].dims() == Dims{});
  REQUIRE(back[0].dtype() == DType::kBool);
  // Before opset 14 a 0 always copies the input's dim, even with an allowzero attribute present.
  auto old = run_node({"Reshape", {Tensor::host(DType::kInt8, {0, 3}), make<int64_t>({2}, {0, 3})},
                       {Attribute::make_int("allowzero", 1)}, 1, 5, {1}});
  REQUIRE(old[0].dims() == Dims{0, 3});
  // -1 next to a 0-sized dim is ambiguous.
  REQUIRE(run_node_error({"Reshape", {Tensor::host(DType::kFloat, {0, 3}), make<int64_t>({2}, {0, -1})}, {}, 1, 17,
                          {1}}).code() == ErrorCode::kShape);
}

TEST_CASE("Reshape rejects two -1s, 0 with -1 under allowzero, and a 0 past the input's rank", "[kernels][Reshape]") {
  auto x = random_tensor({2, 3}, 2);
  REQUIRE(run_node_error({"Reshape", {x, make<int64_t>({2}, {-1, -1})}, {}, 1, 17, {1}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Reshape", {x, make<int64_t>({3}, {0, -1, 0})}, {Attribute::make_int("allowzero", 1)}, 1,
                          17, {1}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Reshape", {x, make<int64_t>({3}, {2, 3, 0})}, {}, 1, 17, {1}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Reshape", {x, make<int64_t>({1}, {-2})}, {}, 1, 17, {1}}).code() == ErrorCode::kShape);
}

TEST_CASE("Reshape's -1 resolves where symbolic dims cancel", "[kernels][Reshape][shape_inference]") {
  auto x = random_tensor({2, 12, 64}, 3);
  Shape batch_seq{Dim("batch"), Dim("seq"), Dim(768)};
  // [batch, seq, 768] -> [0, 0, 12, -1]: heads split off, the symbols are copied through.
  REQUIRE(inferred_shape({"Reshape", {x, make<int64_t>({4}, {0, 0, 12, -1})}, {}, 1, 17, {1}}, batch_seq) ==
          "[batch,seq,12,64]");
  // [batch, 12, 64] -> [-1, 768]: what is left for -1 is the symbol itself.
  REQUIRE(inferred_shape({"Reshape", {x, make<int64_t>({2}, {-1, 768})}, {}, 1, 17, {1}},
                         Shape{Dim("batch"), Dim(12), Dim(64)}) == "[batch,768]");
  // [batch, seq, 768] -> [0, -1]: seq * 768 has no single name.
  REQUIRE(inferred_shape({"Reshape", {x, make<int64_t>({2}, {0, -1})}, {}, 1, 17, {1}}, batch_seq) == "[batch,?]");
  // An anonymous unknown dim leaves -1 unknown.
  REQUIRE(inferred_shape({"Reshape", {x, make<int64_t>({2}, {-1, 64})}, {}, 1, 17, {1}},
                         Shape{Dim(), Dim(12), Dim(64)}) == "[?,64]");
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

TEST_CASE("Flatten of scalars and empty tensors, views keep the storage", "[kernels][Flatten]") {
  auto s = run_node({"Flatten", {make<int64_t>({}, {4})}, {Attribute::make_int("axis", 0)}});
  REQUIRE(s[0].dims() == Dims{1, 1});
  REQUIRE(s[0].to_int64_vector() == std::vector<int64_t>{4});
  REQUIRE(run_node({"Flatten", {Tensor::host(DType::kBool, {2, 0, 3})}})[0].dims() == Dims{2, 0});
  REQUIRE(run_node({"Flatten", {random_tensor({2, 3, 4}, 4)}, {Attribute::make_int("axis", 3)}})[0].dims() ==
          Dims{24, 1});
  auto x = counting_tensor(DType::kInt16, {2, 3, 4});
  auto f = run_node({"Flatten", {x}, {Attribute::make_int("axis", -2)}});
  REQUIRE(f[0].dims() == Dims{2, 12});
  REQUIRE(f[0].raw() == x.raw());
  REQUIRE(run_node_error({"Flatten", {x}, {Attribute::make_int("axis", 4)}}).code() == ErrorCode::kShape);
}

TEST_CASE("Squeeze and Unsqueeze: unsorted axes, scalars, missing axes", "[kernels][Squeeze][Unsqueeze]") {
  auto x = counting_tensor(DType::kUInt8, {1, 3, 1, 1});
  auto all = run_node({"Squeeze", {x}, {}, 1, 13});
  REQUIRE(all[0].dims() == Dims{3});
  REQUIRE(all[0].raw() == x.raw());
  REQUIRE(run_node({"Squeeze", {x, make<int64_t>({2}, {-1, 0})}, {}, 1, 13, {1}})[0].dims() == Dims{3, 1});
  REQUIRE(run_node({"Squeeze", {make<float>({1}, {3})}, {}, 1, 7})[0].dims() == Dims{});
  REQUIRE(run_node_error({"Squeeze", {make<float>({}, {3}), make<int64_t>({1}, {0})}, {}, 1, 13, {1}}).code() ==
          ErrorCode::kShape);
  auto u = run_node({"Unsqueeze", {make<int64_t>({2}, {1, 2}), make<int64_t>({3}, {3, -4, 1})}, {}, 1, 13, {1}});
  REQUIRE(u[0].dims() == Dims{1, 1, 2, 1});
  REQUIRE(run_node({"Unsqueeze", {Tensor::host(DType::kFloat, {0}), make<int64_t>({1}, {1})}, {}, 1, 21, {1}})[0]
              .dims() == Dims{0, 1});
  REQUIRE(run_node_error({"Unsqueeze", {x, make<int64_t>({2}, {0, -6})}, {}, 1, 13, {1}}).code() == ErrorCode::kShape);
  // Axes are required: an attribute before opset 13, an input after.
  REQUIRE(run_node_error({"Unsqueeze", {x}, {}, 1, 13}).code() == ErrorCode::kInvalidArgument);
  REQUIRE(run_node_error({"Unsqueeze", {x}, {}, 1, 11}).code() == ErrorCode::kInvalidArgument);
}
