// Finite-difference checks of the binary/variadic rules on random broadcast shapes.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

NodeSpec binary(const char* op, Rng& r, double lo = -1, double hi = 1) {
  auto [a, b] = r.broadcast_pair();
  return NodeSpec{.op = op, .inputs = {r.uniform(a, lo, hi), r.uniform(b, lo, hi)}};
}

GRAD_CASE("Add", {"Add broadcast", [](Rng& r) { return binary("Add", r); }});
GRAD_CASE("Add", {"Add same input twice", [](Rng& r) {
  Tensor x = r.uniform(r.shape(1, 3));
  return NodeSpec{.op = "Add", .inputs = {x, x}};
}, {0}});
GRAD_CASE("Sub", {"Sub broadcast", [](Rng& r) { return binary("Sub", r); }});
GRAD_CASE("Mul", {"Mul broadcast", [](Rng& r) { return binary("Mul", r); }});
GRAD_CASE("Div", {"Div broadcast", [](Rng& r) {
  auto [a, b] = r.broadcast_pair();
  return NodeSpec{.op = "Div", .inputs = {r.uniform(a), r.uniform(b, 0.5, 2.0)}};
}});
GRAD_CASE("Pow", {"Pow broadcast, positive base", [](Rng& r) {
  auto [a, b] = r.broadcast_pair();
  return NodeSpec{.op = "Pow", .inputs = {r.uniform(a, 0.5, 2.0), r.uniform(b, -1.5, 2.5)}};
}});
GRAD_CASE("Pow", {"Pow integer exponent", [](Rng& r) {
  return NodeSpec{.op = "Pow", .inputs = {r.uniform(r.shape(1, 3), -2, 2), make<int64_t>({}, {3})}};
}});
GRAD_CASE("Max", {"Max of three, broadcast", [](Rng& r) {
  auto [a, b] = r.broadcast_pair(3);
  Tensor x = r.distinct(a), y = r.distinct(b, -0.97, 1.03);  // shifted grid: no ties with x
  return NodeSpec{.op = "Max", .inputs = {x, y, r.distinct(b, -1.01, 0.99)}};
}});
GRAD_CASE("Min", {"Min broadcast", [](Rng& r) {
  auto [a, b] = r.broadcast_pair(3);
  return NodeSpec{.op = "Min", .inputs = {r.distinct(a), r.distinct(b, -0.97, 1.03)}};
}});
GRAD_CASE("Sum", {"Sum of three, broadcast", [](Rng& r) {
  auto [a, b] = r.broadcast_pair();
  return NodeSpec{.op = "Sum", .inputs = {r.uniform(a), r.uniform(b), r.uniform(b)}};
}});
GRAD_CASE("Mean", {"Mean broadcast", [](Rng& r) {
  auto [a, b] = r.broadcast_pair();
  return NodeSpec{.op = "Mean", .inputs = {r.uniform(a), r.uniform(b)}};
}});
GRAD_CASE("Where", {"Where broadcast", [](Rng& r) {
  auto [a, b] = r.broadcast_pair();
  Tensor cond = Tensor::host(DType::kBool, a);
  for (int64_t i = 0; i < cond.numel(); ++i) cond.data<bool>()[i] = r.integer(0, 1) != 0;
  return NodeSpec{.op = "Where", .inputs = {cond, r.uniform(b), r.uniform(a)}};
}});

// Mod(A, B), fmod = 1: each A is B times an integer plus a fraction in
// [0.1, 0.9], so no quotient is near an integer, where the remainder jumps.
// B of A's shape, or a scalar broadcast to A (its gradient then sums).
std::function<NodeSpec(Rng&)> mod(bool scalar_divisor) {
  return [=](Rng& r) {
    Dims d = r.shape(1, 3);
    Tensor b = r.uniform(scalar_divisor ? Dims{} : d, 0.5, 2);
    for (double& v : b.span<double>())
      if (r.integer(0, 1)) v = -v;
    Tensor a = Tensor::host(DType::kDouble, d);
    auto pa = a.span<double>();
    auto pb = b.span<double>();
    for (size_t i = 0; i < pa.size(); ++i)
      pa[i] = pb[scalar_divisor ? 0 : i] * (static_cast<double>(r.integer(-3, 3)) + r.real(0.1, 0.9));
    return NodeSpec{.op = "Mod", .inputs = {a, b}, .attributes = {Attribute::make_int("fmod", 1)}};
  };
}
GRAD_CASE("Mod", {"Mod fmod=1", mod(false)});
GRAD_CASE("Mod", {"Mod fmod=1, scalar divisor", mod(true)});

}  // namespace

TEST_CASE("gradcheck.elementwise_binary") {
  check_registered({"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Where"});
}

}  // namespace ort_train::testing
