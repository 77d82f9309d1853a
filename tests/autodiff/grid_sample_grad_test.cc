// Finite-difference checks of GridSample's gradient (dX and dGrid) in every
// mode and padding mode, with grid values a little beyond [-1, 1] so the
// padding is exercised, and with align_corners both ways.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

NodeSpec grid_sample_case(Rng& r, const std::string& mode, const std::string& padding) {
  int64_t n = r.integer(1, 2), c = r.integer(1, 2);
  return NodeSpec{.op = "GridSample",
                  .inputs = {r.uniform({n, c, 4, 5}), r.uniform({n, 3, 2, 2}, -1.2, 1.2)},
                  .attributes = {Attribute::make_string("mode", mode), Attribute::make_string("padding_mode", padding),
                                 Attribute::make_int("align_corners", r.integer(0, 1))},
                  .opset = 16};
}

GRAD_CASE("GridSample", {"GridSample bilinear, zeros", [](Rng& r) { return grid_sample_case(r, "bilinear", "zeros"); }});
GRAD_CASE("GridSample", {"GridSample bilinear, border", [](Rng& r) { return grid_sample_case(r, "bilinear", "border"); }});
GRAD_CASE("GridSample", {"GridSample bilinear, reflection",
                         [](Rng& r) { return grid_sample_case(r, "bilinear", "reflection"); }});
GRAD_CASE("GridSample", {"GridSample bicubic, zeros", [](Rng& r) { return grid_sample_case(r, "bicubic", "zeros"); }});
GRAD_CASE("GridSample", {"GridSample bicubic, reflection",
                         [](Rng& r) { return grid_sample_case(r, "bicubic", "reflection"); }});
// Nearest: dX only (the output is piecewise constant in the grid).
GRAD_CASE("GridSample", {"GridSample nearest, border", [](Rng& r) { return grid_sample_case(r, "nearest", "border"); },
                         {0}});

}  // namespace

TEST_CASE("gradcheck.grid_sample") { check_registered({"GridSample"}); }

}  // namespace ort_train::testing
