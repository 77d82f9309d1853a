// Gradient rules of MatMul, Gemm and com.ort_train FusedMatMul.
#include <numeric>

#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

// x with its last two dims swapped (rank must be known and >= 2).
Result<std::string> swap_last_two(GradientContext& c, const std::string& x) {
  int64_t r = c.rank(x);
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[r - 1], perm[r - 2]);
  return c.add1("Transpose", {x}, {Attribute::make_ints("perm", perm)});
}

// Y = A @ B with numpy semantics: dA = dY @ B^T, dB = A^T @ dY, summed over
// broadcast batch dims by the driver. 1-D operands are promoted to matrices the
// way MatMul promotes them, and the promoted axis removed again.
Status matmul_rule(GradientContext& c) {
  std::string a = c.I(0), b = c.I(1), dy = c.GO(0);
  int64_t ra = c.rank(a), rb = c.rank(b);
  if (ra < 0 || rb < 0) return c.unsupported_case("operand ranks must be known");
  if (ra == 1 && rb == 1) {  // dot product: dy is a scalar
    if (c.needs_GI(0)) {
      ASSIGN_OR_RETURN(auto g, c.add1("Mul", {dy, b}));
      c.set_GI(0, g);
    }
    if (c.needs_GI(1)) {
      ASSIGN_OR_RETURN(auto g, c.add1("Mul", {dy, a}));
      c.set_GI(1, g);
    }
    return Status::Ok();
  }
  GraphBuilder& gb = c.builder();
  if (ra == 1) {  // [K] -> [1, K]; dy gains the matching axis
    ASSIGN_OR_RETURN(a, gb.unsqueeze(a, {0}));
    ASSIGN_OR_RETURN(dy, gb.unsqueeze(dy, {-2}));
  }
  bool b_vector = rb == 1;
  if (b_vector) {  // [K] -> [K, 1]
    ASSIGN_OR_RETURN(b, gb.unsqueeze(b, {1}));
    ASSIGN_OR_RETURN(dy, gb.unsqueeze(dy, {-1}));
  }
  if (c.needs_GI(0)) {
    std::string g;
    if (c.rank(b) == 2) {
      // A weight matrix: one GEMM reading B transposed in place, over dY's rows
      // folded together, instead of materializing B^T every step.
      int64_t r = c.rank(dy);
      std::string dy2 = dy;
      if (r > 2) {
        ASSIGN_OR_RETURN(dy2, c.add1("Flatten", {dy}, {Attribute::make_int("axis", r - 1)}));
      }
      ASSIGN_OR_RETURN(g, c.add1("Gemm", {dy2, b}, {Attribute::make_int("transB", 1)}));
      if (r > 2) {
        // Back to dY's leading dims with K last: A's shape (A is not broadcast against a 2-D B).
        ASSIGN_OR_RETURN(g, gb.reshape_like(g, a));
      }
    } else {
      ASSIGN_OR_RETURN(auto bt, swap_last_two(c, b));
      ASSIGN_OR_RETURN(g, c.add1("MatMul", {dy, bt}));
    }
    // A 1-D A's promoted row axis is summed away by the driver (SumTo [K]).
    c.set_GI(0, g);
  }
  if (c.needs_GI(1)) {
    std::string g;
    if (c.rank(b) == 2 && c.rank(a) > 2) {
      // Linear layer: fold the batch dims into rows so dB = A2^T @ dY2 is one GEMM
      // instead of a batch of products summed afterwards.
      int64_t r = c.rank(a);
      ASSIGN_OR_RETURN(auto a2, c.add1("Flatten", {a}, {Attribute::make_int("axis", r - 1)}));
      ASSIGN_OR_RETURN(auto dy2, c.add1("Flatten", {dy}, {Attribute::make_int("axis", r - 1)}));
      ASSIGN_OR_RETURN(g, c.add1("Gemm", {a2, dy2}, {Attribute::make_int("transA", 1)}));
    } else {
      ASSIGN_OR_RETURN(auto at, swap_last_two(c, a));
      ASSIGN_OR_RETURN(g, c.add1("MatMul", {at, dy}));
    }
    if (b_vector) { ASSIGN_OR_RETURN(g, gb.squeeze(g, {-1})); }
    c.set_GI(1, g);
  }
  return Status::Ok();
}

// A node that multiplies as Gemm and FusedMatMul do: alpha * x' @ y', with x'
// the transpose of x when tx (y' likewise).
auto transposed_product(GradientContext& c, const char* op, const char* domain, float alpha) {
  return [&c, op, domain, alpha](const std::string& x, const std::string& y, bool tx, bool ty) {
    return c.add1(op, {x, y},
                  {Attribute::make_int("transA", tx), Attribute::make_int("transB", ty),
                   Attribute::make_float("alpha", alpha)},
                  domain);
  };
}

// The gradients of Y = alpha * A' @ B' (A' = ta ? A^T : A, B' likewise), each
// one product(x, y, tx, ty) with the flags chosen so nothing is transposed
// explicitly; a name is empty where that gradient is not needed:
//   dA' = dY @ B'^T; dA = ta ? (dA')^T = B' @ dY^T : dA'
//   dB' = A'^T @ dY; dB = tb ? dY^T @ A' : dB'
template <typename Product>
Result<std::pair<std::string, std::string>> transposed_product_grads(GradientContext& c, const std::string& a,
                                                                     const std::string& b, const std::string& dy,
                                                                     bool ta, bool tb, Product product) {
  std::string da, db;
  if (c.needs_GI(0)) {
    if (!ta) { ASSIGN_OR_RETURN(da, product(dy, b, false, !tb)); }
    else { ASSIGN_OR_RETURN(da, product(b, dy, tb, true)); }
  }
  if (c.needs_GI(1)) {
    if (!tb) { ASSIGN_OR_RETURN(db, product(a, dy, !ta, false)); }
    else { ASSIGN_OR_RETURN(db, product(dy, a, true, ta)); }
  }
  return std::make_pair(da, db);
}

// Y = alpha * A' @ B' + beta * C with A' = transA ? A^T : A (same for B).
// Each gradient is again one Gemm with the transposes chosen so no explicit
// Transpose is needed.
Status gemm_rule(GradientContext& c) {
  bool ta = c.node().attr_int("transA", 0) != 0;
  bool tb = c.node().attr_int("transB", 0) != 0;
  float alpha = c.node().attr_float("alpha", 1.f);
  float beta = c.node().attr_float("beta", 1.f);
  const std::string &a = c.I(0), &b = c.I(1), &dy = c.GO(0);
  auto gemm = transposed_product(c, "Gemm", "", alpha);
  ASSIGN_OR_RETURN(auto grads, transposed_product_grads(c, a, b, dy, ta, tb, gemm));
  if (!grads.first.empty()) c.set_GI(0, grads.first);
  if (!grads.second.empty()) c.set_GI(1, grads.second);
  if (c.num_inputs() > 2 && c.needs_GI(2)) {
    std::string g = dy;
    if (beta != 1.f) { ASSIGN_OR_RETURN(g, c.add1("Mul", {dy, c.builder().scalar(beta, c.dtype(dy))})); }
    c.set_GI(2, g);
  }
  return Status::Ok();
}

// Y = alpha * A' @ B' (+ bias) (A' = transA ? A with its last two dims swapped : A; B'
// likewise; both of rank >= 2). The bias's gradient is dY, which the driver
// sums to the bias's [N] as it did for the Add the bias came from. Each
// other gradient is again one FusedMatMul,
// summed over broadcast batch dims by the driver. A 2-D B (a weight, or a tied
// LM head read transposed) takes Gemms over A's and dY's rows folded
// together instead, dA then shaped back like A.
Status fused_matmul_rule(GradientContext& c) {
  bool ta = c.node().attr_int("transA", 0) != 0, tb = c.node().attr_int("transB", 0) != 0;
  float alpha = c.node().attr_float("alpha", 1.f);
  std::string a = c.I(0), dy = c.GO(0);
  const std::string& b = c.I(1);
  int64_t ra = c.rank(a), rb = c.rank(b);
  if (ra < 2 || rb < 2) return c.unsupported_case("operand ranks must be known and at least 2");
  if (c.num_inputs() > 2 && c.needs_GI(2)) c.set_GI(2, dy);
  bool fold_rows = !ta && rb == 2 && ra > 2;
  if (fold_rows) {
    ASSIGN_OR_RETURN(dy, c.add1("Flatten", {dy}, {Attribute::make_int("axis", c.rank(dy) - 1)}));
    if (c.needs_GI(1)) { ASSIGN_OR_RETURN(a, c.add1("Flatten", {a}, {Attribute::make_int("axis", ra - 1)})); }
  }
  auto product = fold_rows ? transposed_product(c, "Gemm", "", alpha)
                           : transposed_product(c, "FusedMatMul", kOrtTrainDomain, alpha);
  ASSIGN_OR_RETURN(auto grads, transposed_product_grads(c, a, b, dy, ta, tb, product));
  if (!grads.first.empty()) {
    if (fold_rows) { ASSIGN_OR_RETURN(grads.first, c.builder().reshape_like(grads.first, c.I(0))); }
    c.set_GI(0, grads.first);
  }
  if (!grads.second.empty()) c.set_GI(1, grads.second);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("MatMul").rule(matmul_rule);
ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "FusedMatMul").rule(fused_matmul_rule);
ORT_GRADIENT("Gemm").rule(gemm_rule);

}  // namespace ort_train
