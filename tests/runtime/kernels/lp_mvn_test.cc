// LpNormalization's forward against its formula (onnx 1.12 has no node test
// of it): each row along the axis divided by its L1 or L2 norm.
#include <cmath>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("LpNormalization divides each row by its norm", "[kernels][LpNormalization]") {
  Tensor x = make<double>({2, 3}, {3, -4, 0, 1, 2, -2});
  Tensor l2 = run_node({.op = "LpNormalization", .inputs = {x}})[0];
  require_close(l2, make<double>({2, 3}, {0.6, -0.8, 0, 1.0 / 3, 2.0 / 3, -2.0 / 3}), 1e-15, 1e-15);
  Tensor l1 = run_node({.op = "LpNormalization", .inputs = {x},
                        .attributes = {Attribute::make_int("p", 1), Attribute::make_int("axis", 0)}})[0];
  require_close(l1, make<double>({2, 3}, {0.75, -4.0 / 6, 0, 0.25, 2.0 / 6, -1}), 1e-15, 1e-15);
  Status s = run_node_error({.op = "LpNormalization", .inputs = {x}, .attributes = {Attribute::make_int("p", 3)}});
  CHECK_THAT(s.message(), Catch::Contains("p must be 1 or 2"));
}
