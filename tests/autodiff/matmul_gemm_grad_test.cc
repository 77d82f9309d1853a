// Finite-difference checks of MatMul (batched, broadcast, 1-D operands), Gemm
// (every transpose combination, alpha/beta, broadcast C) and com.ort_train
// FusedMatMul (every transpose combination with alpha, batched and broadcast,
// and the tied-weight case: a 2-D B read transposed).
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

GRAD_CASE("MatMul", {"MatMul 2-D", [](Rng& r) {
  int64_t m = r.integer(1, 4), k = r.integer(1, 4), n = r.integer(1, 4);
  return NodeSpec{.op = "MatMul", .inputs = {r.uniform({m, k}), r.uniform({k, n})}};
}});
GRAD_CASE("MatMul", {"MatMul batched with broadcast batch dims", [](Rng& r) {
  int64_t m = r.integer(1, 4), k = r.integer(1, 4), n = r.integer(1, 4), b = r.integer(2, 3);
  return NodeSpec{.op = "MatMul", .inputs = {r.uniform({b, 1, m, k}), r.uniform({3, k, n})}};
}});
GRAD_CASE("MatMul", {"MatMul linear layer (3-D by 2-D)", [](Rng& r) {
  int64_t m = r.integer(1, 4), k = r.integer(1, 4), n = r.integer(1, 4), b = r.integer(1, 3);
  return NodeSpec{.op = "MatMul", .inputs = {r.uniform({b, m, k}), r.uniform({k, n})}};
}});
GRAD_CASE("MatMul", {"MatMul vector by batched matrix", [](Rng& r) {
  int64_t k = r.integer(1, 4), n = r.integer(1, 4);
  return NodeSpec{.op = "MatMul", .inputs = {r.uniform({k}), r.uniform({2, k, n})}};
}});
GRAD_CASE("MatMul", {"MatMul batched matrix by vector", [](Rng& r) {
  int64_t m = r.integer(1, 4), k = r.integer(1, 4);
  return NodeSpec{.op = "MatMul", .inputs = {r.uniform({2, m, k}), r.uniform({k})}};
}});
GRAD_CASE("MatMul", {"MatMul dot product", [](Rng& r) {
  int64_t k = r.integer(1, 5);
  return NodeSpec{.op = "MatMul", .inputs = {r.uniform({k}), r.uniform({k})}};
}});
GRAD_CASE("Gemm", {"Gemm all transposes, alpha, beta, broadcast C", [](Rng& r) {
  int64_t m = r.integer(1, 4), k = r.integer(1, 4), n = r.integer(1, 4);
  int64_t ta = r.integer(0, 1), tb = r.integer(0, 1);
  Dims a = ta ? Dims{k, m} : Dims{m, k};
  Dims b = tb ? Dims{n, k} : Dims{k, n};
  Dims cdims = r.integer(0, 1) ? Dims{n} : Dims{m, 1};
  return NodeSpec{.op = "Gemm", .inputs = {r.uniform(a), r.uniform(b), r.uniform(cdims)},
                  .attributes = {Attribute::make_int("transA", ta), Attribute::make_int("transB", tb),
                                 Attribute::make_float("alpha", 0.75f), Attribute::make_float("beta", 1.5f)}};
}, {}, 1e-5, 1e-6, 1e-6, 8});
GRAD_CASE("Gemm", {"Gemm without C", [](Rng& r) {
  int64_t m = r.integer(1, 4), k = r.integer(1, 4), n = r.integer(1, 4);
  return NodeSpec{.op = "Gemm", .inputs = {r.uniform({m, k}), r.uniform({n, k})},
                  .attributes = {Attribute::make_int("transB", 1)}};
}});

// alpha * A' @ B' with A' = A^T over the last two dims when ta (B' likewise).
NodeSpec fused_matmul(Rng& r, Dims batch_a, Dims batch_b, bool ta, bool tb, float alpha) {
  int64_t m = r.integer(1, 4), k = r.integer(1, 4), n = r.integer(1, 4);
  Dims a = batch_a, b = batch_b;
  a.insert(a.end(), ta ? std::initializer_list<int64_t>{k, m} : std::initializer_list<int64_t>{m, k});
  b.insert(b.end(), tb ? std::initializer_list<int64_t>{n, k} : std::initializer_list<int64_t>{k, n});
  NodeSpec s{.op = "FusedMatMul", .inputs = {r.uniform(a), r.uniform(b)},
             .attributes = {Attribute::make_int("transA", ta), Attribute::make_int("transB", tb),
                            Attribute::make_float("alpha", alpha)}};
  s.domain = kOrtTrainDomain;
  return s;
}

GRAD_CASE("FusedMatMul", {"FusedMatMul all transposes, alpha, batched (com.ort_train)", [](Rng& r) {
  return fused_matmul(r, {2}, {2}, r.integer(0, 1) != 0, r.integer(0, 1) != 0, 0.125f);
}, {}, 1e-5, 1e-6, 1e-6, 8});
GRAD_CASE("FusedMatMul", {"FusedMatMul broadcast batch dims (com.ort_train)", [](Rng& r) {
  return fused_matmul(r, {2, 1}, {3}, r.integer(0, 1) != 0, r.integer(0, 1) != 0, 0.5f);
}, {}, 1e-5, 1e-6, 1e-6, 8});
GRAD_CASE("FusedMatMul", {"FusedMatMul 3-D by a 2-D B read transposed (com.ort_train)", [](Rng& r) {
  return fused_matmul(r, {2}, {}, false, true, 1.f);
}});
GRAD_CASE("FusedMatMul", {"FusedMatMul 3-D by a 2-D B, scaled (com.ort_train)", [](Rng& r) {
  return fused_matmul(r, {3}, {}, false, false, 2.f);
}});

// matmul_add_fusion's form: the Linear layer's bias as the third input.
NodeSpec with_bias(Rng& r, NodeSpec s) {
  int64_t n = s.inputs[1].dims()[s.inputs[1].dims().size() - (s.attributes[1].i ? 2 : 1)];
  s.inputs.push_back(r.uniform({n}));
  return s;
}
GRAD_CASE("FusedMatMul", {"FusedMatMul 3-D by a 2-D B, with a bias (com.ort_train)", [](Rng& r) {
  return with_bias(r, fused_matmul(r, {2}, {}, false, r.integer(0, 1) != 0, 1.f));
}});
GRAD_CASE("FusedMatMul", {"FusedMatMul batched, transposed, scaled, with a bias (com.ort_train)", [](Rng& r) {
  return with_bias(r, fused_matmul(r, {2}, {2}, r.integer(0, 1) != 0, r.integer(0, 1) != 0, 0.5f));
}, {}, 1e-5, 1e-6, 1e-6, 8});

}  // namespace

TEST_CASE("gradcheck.matmul_gemm") { check_registered({"MatMul", "Gemm", "FusedMatMul"}); }

}  // namespace ort_train::testing
