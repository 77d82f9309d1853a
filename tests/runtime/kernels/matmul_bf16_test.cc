// bfloat16 MatMul, Gemm and FusedMatMul (oneDNN, float32 accumulation, one
// rounding) against the float32 kernels run on the same bfloat16 values: they
// agree to bfloat16's rounding (2^-8 relative) plus the float32 sums' order.
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

Tensor to_bf16(const Tensor& f) {
  Tensor t = Tensor::host(DType::kBFloat16, f.dims());
  for (int64_t i = 0; i < f.numel(); ++i) t.data<BFloat16>()[i] = BFloat16(f.data<float>()[i]);
  return t;
}

Tensor to_float(const Tensor& b) {
  Tensor t = Tensor::host(DType::kFloat, b.dims());
  for (int64_t i = 0; i < b.numel(); ++i) t.data<float>()[i] = static_cast<float>(b.data<BFloat16>()[i]);
  return t;
}

// Runs spec on bfloat16 copies of its inputs and on their float32 values;
// the bfloat16 result must be the float32 one rounded, give or take an ulp.
void require_bf16_matches_float(NodeSpec spec) {
  NodeSpec narrow = spec;
  for (Tensor& t : narrow.inputs) t = to_bf16(t);
  for (Tensor& t : spec.inputs) t = to_float(to_bf16(t));  // the same values, widened
  Tensor low = run_node(narrow)[0], wide = run_node(spec)[0];
  REQUIRE(low.dtype() == DType::kBFloat16);
  require_close(to_float(low), wide, 1.0 / 128, 1e-3);
}

}  // namespace

TEST_CASE("bfloat16 MatMul: shared weights, batched per-head products, broadcast batches", "[kernels][MatMul][bf16]") {
  require_bf16_matches_float({"MatMul", {random_tensor({3, 8, 33}, 1), random_tensor({33, 17}, 2)}});
  require_bf16_matches_float({"MatMul", {random_tensor({2, 4, 16, 24}, 3), random_tensor({2, 4, 24, 16}, 4)}});
  require_bf16_matches_float({"MatMul", {random_tensor({1, 5, 9}, 5), random_tensor({3, 9, 6}, 6)}});
}

TEST_CASE("bfloat16 Gemm with transposes, alpha and beta * C", "[kernels][Gemm][bf16]") {
  std::vector<Attribute> attrs{Attribute::make_int("transA", 1), Attribute::make_int("transB", 1),
                               Attribute::make_float("alpha", 0.5f), Attribute::make_float("beta", 2.f)};
  require_bf16_matches_float({"Gemm", {random_tensor({20, 12}, 7), random_tensor({9, 20}, 8), random_tensor({9}, 9)},
                              attrs});
  require_bf16_matches_float({"Gemm", {random_tensor({12, 20}, 10), random_tensor({20, 9}, 11)}});
}

TEST_CASE("bfloat16 FusedMatMul with transB, alpha and a bias", "[kernels][FusedMatMul][bf16]") {
  NodeSpec spec{"FusedMatMul", {random_tensor({2, 10, 16}, 12), random_tensor({24, 16}, 13), random_tensor({24}, 14)},
                {Attribute::make_int("transB", 1), Attribute::make_float("alpha", 0.25f)}};
  spec.domain = kOrtTrainDomain;
  require_bf16_matches_float(spec);
}
