// training/backward_norm.h: the gradients' norm read as the backward makes
// each final equals VectorOps::global_norm to the bit, in any arrival order.
#include <cmath>
#include <random>

#include "runtime/vector_ops.h"
#include "training/backward_norm.h"
#include "test_util.h"

namespace ort_train::testing {

namespace {

Tensor random_tensor(int64_t n, uint32_t seed) {
  Tensor t = Tensor::host(DType::kFloat, {n});
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  for (int64_t k = 0; k < n; ++k) t.data<float>()[k] = d(rng) * static_cast<float>(k % 7 + 1);
  return t;
}

}  // namespace

TEST_CASE("backward_norm.equals_global_norm_to_the_bit_in_any_order") {
  auto math = vector_ops(DeviceKind::kCpu);
  REQUIRE(math.ok());
  // Sizes across the chunk size: sums of several chunks, a partial last chunk, one element.
  std::vector<Tensor> grads{random_tensor(3 * kNormChunk + 17, 1), random_tensor(1, 2), random_tensor(kNormChunk, 3),
                            random_tensor(100003, 4)};
  auto want = (*math)->global_norm(grads);
  REQUIRE(want.ok());
  BackwardNorm norm({"a_grad", "b_grad", "c_grad", "d_grad"}, grads, **math);
  CHECK_FALSE(norm.finish().ok());  // asked before a backward
  norm.begin();
  // The backward finishes gradients in its own order; some it never reports (constant ones).
  for (const char* name : {"d_grad", "not_a_gradient", "a_grad", "d_grad", "b_grad"})
    REQUIRE(norm.gradient_ready(name).ok());
  CHECK(norm.read_during_run() == 3);
  auto got = norm.finish();
  REQUIRE(got.ok());
  CHECK(*got == *want);  // bit for bit
  // A second step reads the new values.
  grads[0].data<float>()[5] += 1000.f;
  norm.begin();
  REQUIRE(norm.gradient_ready("a_grad").ok());
  auto again = norm.finish();
  REQUIRE(again.ok());
  CHECK(*again == *(*math)->global_norm(grads));
  CHECK(*again != *got);
}

}  // namespace ort_train::testing
