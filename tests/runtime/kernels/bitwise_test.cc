// BitwiseAnd/Or/Xor/Not and BitShift on signed and unsigned integers, with
// broadcasting; onnx 1.23's cases run in tests/conformance/bitwise.
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("Bitwise ops on integers, broadcast", "[kernels][BitwiseAnd][BitwiseOr][BitwiseXor][BitwiseNot]") {
  auto a = make<int32_t>({2, 2}, {12, -1, 5, 0});
  auto b = make<int32_t>({2}, {10, 3});
  CHECK(run_node({"BitwiseAnd", {a, b}, {}, 1, 18})[0].to_int64_vector() == std::vector<int64_t>{8, 3, 0, 0});
  CHECK(run_node({"BitwiseOr", {a, b}, {}, 1, 18})[0].to_int64_vector() == std::vector<int64_t>{14, -1, 15, 3});
  CHECK(run_node({"BitwiseXor", {a, b}, {}, 1, 18})[0].to_int64_vector() == std::vector<int64_t>{6, -4, 15, 3});
  CHECK(run_node({"BitwiseNot", {a}, {}, 1, 18})[0].to_int64_vector() == std::vector<int64_t>{-13, 0, -6, -1});
  auto u = make<uint8_t>({3}, {0x0f, 0xff, 1});
  CHECK(run_node({"BitwiseNot", {u}, {}, 1, 18})[0].to_int64_vector() == std::vector<int64_t>{0xf0, 0, 0xfe});
  // Floats are refused by the shape rule.
  CHECK(run_node_error({"BitwiseAnd", {make<float>({1}, {1}), make<float>({1}, {1})}, {}, 1, 18})
            .message()
            .find("integer") != std::string::npos);
}

TEST_CASE("BitShift left and right, past the width", "[kernels][BitShift]") {
  auto x = make<uint8_t>({4}, {1, 0x80, 3, 0xff});
  auto s = make<uint8_t>({4}, {3, 1, 8, 4});
  CHECK(run_node({"BitShift", {x, s}, {Attribute::make_string("direction", "LEFT")}, 1, 11})[0].to_int64_vector() ==
        std::vector<int64_t>{8, 0, 0, 0xf0});
  CHECK(run_node({"BitShift", {x, s}, {Attribute::make_string("direction", "RIGHT")}, 1, 11})[0].to_int64_vector() ==
        std::vector<int64_t>{0, 0x40, 0, 0x0f});
  CHECK_FALSE(run_node_error({"BitShift", {x, s}, {Attribute::make_string("direction", "UP")}, 1, 11}).ok());
  // Signed: arithmetic right shifts; shifts out of range give 0, or -1 for a negative value shifted right.
  auto i = make<int8_t>({4}, {-16, -16, 64, -1});
  auto k = make<int8_t>({4}, {2, 9, 1, -1});
  CHECK(run_node({"BitShift", {i, k}, {Attribute::make_string("direction", "RIGHT")}, 1, 11})[0].to_int64_vector() ==
        std::vector<int64_t>{-4, -1, 32, -1});
  CHECK(run_node({"BitShift", {i, k}, {Attribute::make_string("direction", "LEFT")}, 1, 11})[0].to_int64_vector() ==
        std::vector<int64_t>{-64, 0, -128, 0});
}

}  // namespace ort_train::testing
