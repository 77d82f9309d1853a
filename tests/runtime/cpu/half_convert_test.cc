// The vectorized float32 <-> bfloat16 conversions give BFloat16(float)'s
// bits: round to nearest with ties to even, infinities kept, NaN quiet with
// its sign, overflow past the largest bfloat16 to infinity; widening exact.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "runtime/cpu/half_convert.h"
#include "test_util.h"

namespace ort_train::testing {

namespace {
float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
}  // namespace

TEST_CASE("half_convert.float_to_bfloat16_matches_the_scalar_rounding") {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.5f, 3.14159f, 1e-40f, -1e-45f, 65504.f, 3.4e38f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::nanf(""), -std::nanf(""), from_bits(0x3f808000u) /* tie: stays even */,
                          from_bits(0x3f818000u) /* tie: rounds up to even */, from_bits(0x7f7fffffu) /* to inf */,
                          from_bits(0x7f800001u) /* signalling NaN */};
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 10000; ++i) v.push_back(from_bits(bits(gen)));
  std::vector<BFloat16> fast(v.size());
  float_to_bfloat16(v.data(), fast.data(), static_cast<int64_t>(v.size()));
  std::vector<float> back(v.size());
  bfloat16_to_float(fast.data(), back.data(), static_cast<int64_t>(v.size()));
  int mismatches = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    BFloat16 want(v[i]);
    mismatches += fast[i].bits != want.bits;
    float w = static_cast<float>(want);
    mismatches += !(back[i] == w || (std::isnan(back[i]) && std::isnan(w)));
  }
  CHECK(mismatches == 0);
  CHECK(fast[13].bits == 0x3f80);
  CHECK(fast[14].bits == 0x3f82);
  CHECK(std::isinf(back[15]));
  CHECK(std::isnan(back[16]));
}

}  // namespace ort_train::testing
