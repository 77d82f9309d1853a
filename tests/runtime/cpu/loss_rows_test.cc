// The softmax cross-entropy's float32 rows (runtime/cpu/loss_rows.h) against
// double precision, on lengths that leave every tail of the eight lanes.
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/cpu/loss_rows.h"

namespace ort_train {

TEST_CASE("log_softmax_row_f32 and scaled_exp_row_f32 agree with double precision at every row length") {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 4.f);
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 1000, 30522}) {
    std::vector<float> x(static_cast<size_t>(n)), lp(x.size()), p(x.size());
    for (float& v : x) v = normal(gen);
    x[static_cast<size_t>(n / 2)] += 30.f;  // one dominant logit: the max shift matters
    log_softmax_row_f32(x.data(), lp.data(), n);
    double mx = -INFINITY, sum = 0;
    for (float v : x) mx = std::max(mx, static_cast<double>(v));
    for (float v : x) sum += std::exp(v - mx);
    const double lse = mx + std::log(sum);
    scaled_exp_row_f32(lp.data(), 0.25f, p.data(), n);
    double total = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double want = x[static_cast<size_t>(k)] - lse;
      INFO("n " << n << " k " << k);
      // One float rounding of x - lse, whose own error is a few ulp of lse.
      REQUIRE(std::abs(lp[static_cast<size_t>(k)] - want) <= 4e-6 * (std::abs(lse) + 1.0));
      REQUIRE(std::abs(p[static_cast<size_t>(k)] - 0.25 * std::exp(want)) <= 1e-5 * 0.25 * std::exp(want) + 1e-30);
      total += p[static_cast<size_t>(k)];
    }
    CHECK(std::abs(total - 0.25) < 1e-5);
  }
}

}  // namespace ort_train
