// fast_exp against double-precision exp: within 2 ulp of float over the range
// the loss kernels feed it, and sensible at the clamps.
#include "runtime/cpu/fast_exp.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

using namespace ort_train;

TEST_CASE("fast_exp is within 2 ulp of exp over [-87, 88]") {
  double worst = 0;
  float at = 0;
  for (float x = -87.f; x <= 88.f; x += 0.000731f) {
    double want = std::exp(static_cast<double>(x));
    double err = std::abs(static_cast<double>(fast_exp(x)) - want) / want;
    if (err > worst) {
      worst = err;
      at = x;
    }
  }
  INFO("worst relative error " << worst << " at x = " << at);
  CHECK(worst < 2 * std::numeric_limits<float>::epsilon());
  CHECK(fast_exp(0.f) == 1.f);
  CHECK(fast_exp(-1000.f) > 0.f);
  CHECK(fast_exp(-1000.f) < 1e-37f);
  CHECK(std::isfinite(fast_exp(1000.f)));
  CHECK(std::isnan(fast_exp(std::numeric_limits<float>::quiet_NaN())));
}
