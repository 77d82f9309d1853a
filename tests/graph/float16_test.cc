// The 16-bit float storage types (numerics/float16.h): conversions round
// to nearest even, checked against the compiler's own _Float16 where it has
// one, exhaustively over every 16-bit pattern, and at the edges (ties,
// overflow, subnormals, NaN). The same functions run in the CUDA kernels.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "numerics/cast_value.h"
#include "graph/dispatch.h"
#include "graph/dtype.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

uint16_t half_of(float f) { return Float16(f).bits; }
uint16_t bf16_of(float f) { return BFloat16(f).bits; }

}  // namespace

TEST_CASE("float16: every bit pattern widens exactly and narrows back to itself", "[float16]") {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = static_cast<float>(Float16::from_bits(static_cast<uint16_t>(b)));
    bool nan = (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0;
    INFO("bits 0x" << std::hex << b);
    if (nan) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::isnan(static_cast<float>(Float16(f))));
    } else {
      REQUIRE(half_of(f) == b);
    }
  }
}

TEST_CASE("bfloat16: every bit pattern widens exactly and narrows back to itself", "[float16]") {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = static_cast<float>(BFloat16::from_bits(static_cast<uint16_t>(b)));
    bool nan = (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
    INFO("bits 0x" << std::hex << b);
    if (nan) REQUIRE(std::isnan(static_cast<float>(BFloat16(f))));
    else REQUIRE(bf16_of(f) == b);
  }
}

TEST_CASE("float16: rounding to nearest even at ties, overflow, subnormals", "[float16]") {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  CHECK(half_of(1.f + std::ldexp(1.f, -11)) == 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  CHECK(half_of(1.f + 3 * std::ldexp(1.f, -11)) == 0x3c02);
  CHECK(half_of(1.f + std::ldexp(1.f, -11) + std::ldexp(1.f, -20)) == 0x3c01);  // just above the tie
  CHECK(half_of(65504.f) == 0x7bff);
  CHECK(half_of(65519.99f) == 0x7bff);
  CHECK(half_of(65520.f) == 0x7c00);  // the tie above the largest half rounds to infinity
  CHECK(half_of(-1e9f) == 0xfc00);
  CHECK(half_of(std::ldexp(1.f, -24)) == 0x0001);  // smallest subnormal
  CHECK(half_of(std::ldexp(1.f, -25)) == 0x0000);  // half of it: a tie, to even (zero)
  CHECK(half_of(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(half_of(std::ldexp(1.f, -14)) == 0x0400);  // smallest normal
  CHECK(half_of(-0.f) == 0x8000);
  CHECK(std::isnan(static_cast<float>(Float16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(static_cast<float>(Float16::from_bits(0x3555)) == 0.333251953125f);
}

TEST_CASE("bfloat16: rounding to nearest even", "[float16]") {
  CHECK(bf16_of(1.f) == 0x3f80);
  CHECK(bf16_of(1.f + std::ldexp(1.f, -8)) == 0x3f80);      // tie -> even
  CHECK(bf16_of(1.f + 3 * std::ldexp(1.f, -8)) == 0x3f82);  // tie -> even (up)
  CHECK(bf16_of(1.f + std::ldexp(1.f, -8) + std::ldexp(1.f, -20)) == 0x3f81);
  CHECK(bf16_of(std::numeric_limits<float>::max()) == 0x7f80);  // rounds past the largest bfloat16
  CHECK(bf16_of(-2.5f) == 0xc020);
}

#ifdef __FLT16_MAX__
TEST_CASE("float16: narrowing agrees with the compiler's _Float16 on a million floats", "[float16]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  int checked = 0;
  for (int i = 0; i < 1000000; ++i) {
    uint32_t u = bits(rng);
    if (i % 2) u = (u & 0x807fffffu) | ((100u + u % 50u) << 23);  // half the draws in the half range
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    if (half_of(f) != want) FAIL("float bits 0x" << std::hex << u << ": got 0x" << half_of(f) << ", want 0x" << want);
    ++checked;
  }
  CHECK(checked > 990000);
}
#endif

TEST_CASE("float16: dtype_of, dispatch and the shared Cast element", "[float16]") {
  STATIC_REQUIRE(dtype_of<Float16>() == DType::kFloat16);
  STATIC_REQUIRE(dtype_of<BFloat16>() == DType::kBFloat16);
  int seen = 0;
  CHECK(dispatch_stored(DType::kFloat16, [&]<typename T>() { seen += std::is_same_v<T, Float16>; }));
  CHECK(dispatch_stored(DType::kBFloat16, [&]<typename T>() { seen += std::is_same_v<T, BFloat16>; }));
  CHECK(seen == 2);
  // The arithmetic dispatchers do not offer them: no kernel computes in 16 bits by accident.
  CHECK_FALSE(dispatch_all(DType::kFloat16, [&]<typename T>() {}));
  CHECK_FALSE(dispatch_float(DType::kBFloat16, [&]<typename T>() {}));
  CHECK(cast_value<Float16, int32_t>(Float16(-3.75f)) == -3);
  CHECK(cast_value<Float16, bool>(Float16(0.f)) == false);
  CHECK(cast_value<bool, Float16>(true).bits == 0x3c00);
  CHECK(cast_value<int64_t, BFloat16>(int64_t{3}).bits == 0x4040);
  CHECK(cast_value<Float16, BFloat16>(Float16(1.5f)).bits == 0x3fc0);
  Float16 minus_two = Float16::from_bits(0xc000);
  CHECK(float_element(DType::kFloat16, &minus_two, 0) == -2.0);
}

}  // namespace ort_train::testing
