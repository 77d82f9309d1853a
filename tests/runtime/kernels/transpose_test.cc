// Transpose: default and explicit perms, every dtype size, and the blocked path
// (large 2-D and batched transposes) against an element-by-element reference.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// out[i_0..i_r] = x[...] with input coordinate perm[d] = i_d, one element at a time.
std::vector<int64_t> reference_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> in = x.to_int64_vector(), out(in.size());
  int64_t rank = x.rank();
  std::vector<int64_t> in_stride(static_cast<size_t>(rank), 1);
  for (int64_t d = rank - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * x.dims()[d + 1];
  for (int64_t o = 0; o < static_cast<int64_t>(out.size()); ++o) {
    int64_t rem = o, off = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t n = x.dims()[perm[d]];
      off += rem % n * in_stride[perm[d]];
      rem /= n;
    }
    out[o] = in[off];
  }
  return out;
}

void check_transpose(DType dt, const Dims& dims, const std::vector<int64_t>& perm) {
  Tensor x = counting_tensor(dt, dims);
  auto y = run_node({"Transpose", {x}, {Attribute::make_ints("perm", perm)}});
  Dims expected_dims;
  for (int64_t p : perm) expected_dims.push_back(dims[p]);
  REQUIRE(y[0].dtype() == dt);
  REQUIRE(y[0].dims() == expected_dims);
  REQUIRE(y[0].to_int64_vector() == reference_transpose(x, perm));
}

}  // namespace

TEST_CASE("Transpose default and explicit perms, and of an empty tensor", "[kernels][Transpose]") {
  auto x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  require_close(run_node({"Transpose", {x}})[0], make<float>({3, 2}, {1, 4, 2, 5, 3, 6}));
  auto y = make<int64_t>({2, 1, 2}, {1, 2, 3, 4});
  auto t = run_node({"Transpose", {y}, {Attribute::make_ints("perm", {2, 0, 1})}});
  REQUIRE(t[0].dims() == Dims{2, 2, 1});
  REQUIRE(t[0].to_int64_vector() == std::vector<int64_t>{1, 3, 2, 4});
  REQUIRE(run_node({"Transpose", {Tensor::host(DType::kFloat, {0, 4})}})[0].dims() == Dims{4, 0});
  auto scalar = run_node({"Transpose", {make<double>({}, {2.5})}});
  REQUIRE(scalar[0].dims() == Dims{});
  REQUIRE(scalar[0].to_double_vector() == std::vector<double>{2.5});
}

TEST_CASE("Transpose default perm reverses every axis", "[kernels][Transpose]") {
  Tensor x = counting_tensor(DType::kInt32, {2, 3, 4});
  auto y = run_node({"Transpose", {x}});
  REQUIRE(y[0].dims() == Dims{4, 3, 2});
  REQUIRE(y[0].to_int64_vector() == reference_transpose(x, {2, 1, 0}));
}

TEST_CASE("Transpose of large and batched matrices goes tile by tile, for every element size",
          "[kernels][Transpose]") {
  // Sizes that are not multiples of the tile, big enough to split across threads.
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kInt8, DType::kInt16, DType::kBool, DType::kUInt64}) {
    INFO(dtype_name(dt));
    check_transpose(dt, {131, 67}, {1, 0});
    check_transpose(dt, {3, 45, 70}, {0, 2, 1});
  }
  check_transpose(DType::kFloat, {600, 300}, {1, 0});
  check_transpose(DType::kFloat, {2, 8, 33, 40}, {0, 2, 3, 1});  // NCHW -> NHWC
  check_transpose(DType::kFloat, {2, 33, 40, 8}, {0, 3, 1, 2});  // NHWC -> NCHW
  check_transpose(DType::kInt64, {40, 3, 50}, {2, 1, 0});
  // Thin matrices skip the tiles; both paths must agree with the reference.
  check_transpose(DType::kFloat, {1000, 3}, {1, 0});
  check_transpose(DType::kFloat, {3, 1000}, {1, 0});
}

TEST_CASE("Transpose keeping the last axis copies whole rows", "[kernels][Transpose]") {
  check_transpose(DType::kFloat, {4, 5, 64}, {1, 0, 2});          // attention heads: [b,s,h*d] style
  check_transpose(DType::kInt64, {2, 3, 4, 16}, {0, 2, 1, 3});
  check_transpose(DType::kUInt8, {7, 1, 9}, {1, 0, 2});            // a size-1 axis moves
}

TEST_CASE("Transpose rejects a perm of the wrong length or with repeats", "[kernels][Transpose]") {
  auto x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  REQUIRE(run_node_error({"Transpose", {x}, {Attribute::make_ints("perm", {0})}}).code() == ErrorCode::kShape);
  REQUIRE(run_node_error({"Transpose", {x}, {Attribute::make_ints("perm", {1, 1})}}).code() == ErrorCode::kShape);
}
