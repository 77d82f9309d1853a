// bfloat16 and float16 MatMul, Gemm and FusedMatMul (float32 accumulation,
// one rounding: oneDNN for bfloat16, float16 widened into OpenBLAS's sgemm)
// against the float32 kernels run on the same 16-bit values: they agree to
// the 16-bit type's rounding (2^-8 relative for bfloat16, 2^-11 for float16)
// plus the float32 sums' order.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// Runs spec on 16-bit copies of its inputs and on their float32 values; the
// 16-bit result must be the float32 one rounded, give or take an ulp.
template <typename T>
void require_half_matches_float(NodeSpec spec) {
  NodeSpec low_spec = spec;
  for (Tensor& t : low_spec.inputs) t = narrowed<T>(t);
  for (Tensor& t : spec.inputs) t = widened<T>(narrowed<T>(t));  // the same values, widened
  Tensor low = run_node(low_spec)[0], wide = run_node(spec)[0];
  REQUIRE(low.dtype() == dtype_of<T>());
  double ulp = std::is_same_v<T, BFloat16> ? 1.0 / 128 : 1.0 / 1024;
  require_close(widened<T>(low), wide, ulp, 1e-3);
}

void require_both_match_float(const NodeSpec& spec) {
  require_half_matches_float<BFloat16>(spec);
  require_half_matches_float<Float16>(spec);
}

}  // namespace

TEST_CASE("16-bit MatMul: shared weights, batched per-head products, broadcast batches", "[kernels][MatMul][half]") {
  require_both_match_float({"MatMul", {random_tensor({3, 8, 33}, 1), random_tensor({33, 17}, 2)}});
  require_both_match_float({"MatMul", {random_tensor({2, 4, 16, 24}, 3), random_tensor({2, 4, 24, 16}, 4)}});
  require_both_match_float({"MatMul", {random_tensor({1, 5, 9}, 5), random_tensor({3, 9, 6}, 6)}});
}

TEST_CASE("16-bit Gemm with transposes, alpha and beta * C", "[kernels][Gemm][half]") {
  std::vector<Attribute> attrs{Attribute::make_int("transA", 1), Attribute::make_int("transB", 1),
                               Attribute::make_float("alpha", 0.5f), Attribute::make_float("beta", 2.f)};
  require_both_match_float({"Gemm", {random_tensor({20, 12}, 7), random_tensor({9, 20}, 8), random_tensor({9}, 9)},
                            attrs});
  require_both_match_float({"Gemm", {random_tensor({12, 20}, 10), random_tensor({20, 9}, 11)}});
}

TEST_CASE("16-bit FusedMatMul with transB, alpha and a bias", "[kernels][FusedMatMul][half]") {
  NodeSpec spec{"FusedMatMul", {random_tensor({2, 10, 16}, 12), random_tensor({24, 16}, 13), random_tensor({24}, 14)},
                {Attribute::make_int("transB", 1), Attribute::make_float("alpha", 0.25f)}};
  spec.domain = kOrtTrainDomain;
  require_both_match_float(spec);
}

TEST_CASE("float16 GEMM overflow: a product past 65504 is inf, as PyTorch's float16 matmul", "[kernels][MatMul][half]") {
  // What --precision fp16's loss scaling detects: the product is accumulated
  // in float32 and only its rounding to float16 overflows.
  Tensor a = narrowed<Float16>(make<float>({1, 2}, {300.f, 300.f})), b = narrowed<Float16>(make<float>({2, 1}, {200.f, 200.f}));
  Tensor y = run_node({"MatMul", {a, b}})[0];
  CHECK(std::isinf(static_cast<float>(y.data<Float16>()[0])));
  Tensor c = narrowed<Float16>(make<float>({2, 1}, {100.f, 100.f}));
  CHECK(static_cast<float>(run_node({"MatMul", {a, c}})[0].data<Float16>()[0]) == 60000.f);
}
