// NonZero: coordinates in row-major order, one row per dimension, for
// floats (-0.0 is zero), bools and a scalar; an all-zero input gives N = 0.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("NonZero lists coordinates row by row, in row-major order", "[kernels][NonZero]") {
  NodeSpec s{.op = "NonZero", .inputs = {make<float>({2, 3}, {0.f, 1.5f, -0.f, 2.f, 0.f, -3.f})}};
  auto out = run_node(s);
  require_close(out[0], make<int64_t>({2, 3}, {0, 1, 1, 1, 0, 2}), 0, 0);
  Tensor b = Tensor::host(DType::kBool, {4});
  for (int i = 0; i < 4; ++i) b.data<bool>()[i] = i % 3 == 0;
  auto bools = run_node({.op = "NonZero", .inputs = {b}});
  require_close(bools[0], make<int64_t>({1, 2}, {0, 3}), 0, 0);
  auto none = run_node({.op = "NonZero", .inputs = {make<int32_t>({3}, {0, 0, 0})}});
  CHECK(none[0].dims() == Dims{1, 0});
  auto scalar = run_node({.op = "NonZero", .inputs = {make<float>({}, {4.f})}});
  CHECK(scalar[0].dims() == Dims{0, 1});
}
