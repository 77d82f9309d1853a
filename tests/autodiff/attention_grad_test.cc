// Finite-difference checks of com.ort_train Attention's fused gradient
// (AttentionGrad): plain, K given transposed, a trainable bias, grouped-query
// heads with a causal bool mask, dropout, and sizes that cross the kernels'
// 64-query and 128-key blocks.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

Tensor causal_mask(int64_t t, int64_t s) {
  Tensor m = Tensor::host(DType::kBool, {1, 1, t, s});
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < s; ++j) m.data<bool>()[i * s + j] = j <= i + (s - t);
  return m;
}

NodeSpec attention(std::vector<Tensor> inputs, std::vector<Attribute> attrs, size_t outputs = 1) {
  NodeSpec s{.op = "Attention", .inputs = std::move(inputs), .attributes = std::move(attrs), .num_outputs = outputs};
  s.domain = kOrtTrainDomain;
  return s;
}

GRAD_CASE("Attention", {"Attention [2, 2, 5, 3] over 6 keys, scale 0.5 (com.ort_train)", [](Rng& r) {
  return attention({r.uniform({2, 2, 5, 3}), r.uniform({2, 2, 6, 3}), r.uniform({2, 2, 6, 4})},
                   {Attribute::make_float("scale", 0.5f)}, 2);
}});
GRAD_CASE("Attention", {"Attention, K transposed, trainable bias [2, 1, 1, 6] (com.ort_train)", [](Rng& r) {
  return attention({r.uniform({2, 3, 4, 3}), r.uniform({2, 3, 3, 6}), r.uniform({2, 3, 6, 2}),
                    r.uniform({2, 1, 1, 6})},
                   {Attribute::make_int("k_transposed", 1), Attribute::make_float("scale", 0.7f)});
}});
GRAD_CASE("Attention", {"Attention, full-shape trainable bias (T5's position bias) (com.ort_train)", [](Rng& r) {
  return attention({r.uniform({1, 2, 4, 3}), r.uniform({1, 2, 5, 3}), r.uniform({1, 2, 5, 3}),
                    r.uniform({1, 2, 4, 5})},
                   {});
}});
GRAD_CASE("Attention", {"Attention, grouped-query heads (4 on 2), causal bool mask (com.ort_train)", [](Rng& r) {
  return attention({r.uniform({1, 4, 5, 3}), r.uniform({1, 2, 6, 3}), r.uniform({1, 2, 6, 3}), Tensor(),
                    causal_mask(5, 6)},
                   {Attribute::make_float("scale", 0.5f), Attribute::make_float("mask_fill", -1e4f)});
}});
GRAD_CASE("Attention", {"Attention, mask filling where true, bias too (com.ort_train)", [](Rng& r) {
  Tensor m = causal_mask(4, 4);
  for (bool& b : m.span<bool>()) b = !b;
  return attention({r.uniform({1, 2, 4, 3}), r.uniform({1, 2, 4, 3}), r.uniform({1, 2, 4, 3}),
                    r.uniform({1, 1, 4, 4}), m},
                   {Attribute::make_int("mask_fill_when", 1), Attribute::make_float("mask_fill", -3e38f)});
}});
GRAD_CASE("Attention", {"Attention with dropout 0.3 (one mask for forward and backward) (com.ort_train)", [](Rng& r) {
  return attention({r.uniform({2, 2, 6, 3}), r.uniform({2, 2, 7, 3}), r.uniform({2, 2, 7, 3})},
                   {Attribute::make_float("dropout_ratio", 0.3f), Attribute::make_int("seed", 5)});
}});
GRAD_CASE("Attention", {"Attention over 70 queries and 140 keys (several blocks), causal (com.ort_train)",
                        [](Rng& r) {
  return attention({r.uniform({1, 1, 70, 2}), r.uniform({1, 1, 140, 2}), r.uniform({1, 1, 140, 2}), Tensor(),
                    causal_mask(70, 140)},
                   {Attribute::make_float("scale", 2.0f), Attribute::make_float("mask_fill", -1e9f)});
}, {}, 1e-5, 1e-6, 1e-6, 1});

}  // namespace

TEST_CASE("gradcheck.attention") { check_registered({"Attention"}); }

}  // namespace ort_train::testing
