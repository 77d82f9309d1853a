// Finite-difference checks of LpNormalization (p 1 and 2; p 1 away from 0,
// where |x| kinks) and MeanVarianceNormalization (default and given axes).
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("LpNormalization", {"LpNormalization p 2, last axis", [](Rng& r) {
  return NodeSpec{.op = "LpNormalization", .inputs = {r.uniform({3, 4})}};
}});
GRAD_CASE("LpNormalization", {"LpNormalization p 1, axis 0", [](Rng& r) {
  return NodeSpec{.op = "LpNormalization", .inputs = {r.away_from({3, 2, 2}, 0, 0.05)},
                  .attributes = {Attribute::make_int("p", 1), Attribute::make_int("axis", 0)}};
}});
GRAD_CASE("MeanVarianceNormalization", {"MeanVarianceNormalization default axes", [](Rng& r) {
  return NodeSpec{.op = "MeanVarianceNormalization", .inputs = {r.uniform({2, 3, 2, 2})}};
}});
GRAD_CASE("MeanVarianceNormalization", {"MeanVarianceNormalization axes [1]", [](Rng& r) {
  return NodeSpec{.op = "MeanVarianceNormalization", .inputs = {r.uniform({2, 5, 3})},
                  .attributes = {Attribute::make_ints("axes", {1})}};
}});

}  // namespace

TEST_CASE("gradcheck.lp_mvn") { check_registered({"LpNormalization", "MeanVarianceNormalization"}); }

}  // namespace ort_train::testing
