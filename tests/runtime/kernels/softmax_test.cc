// Softmax and LogSoftmax against a naive reference, across the opset-13 change
// (one axis) from the older 2-D coercion (everything from `axis` on).
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// Naive reference in double: x viewed as [outer, n, inner], normalized along n.
Tensor reference(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool log) {
  Tensor y = Tensor::host(x.dtype(), x.dims());
  auto xs = x.to_double_vector();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; ++k) mx = std::max(mx, xs[(o * n + k) * inner + i]);
      for (int64_t k = 0; k < n; ++k) sum += std::exp(xs[(o * n + k) * inner + i] - mx);
      for (int64_t k = 0; k < n; ++k) {
        int64_t at = (o * n + k) * inner + i;
        double v = log ? xs[at] - mx - std::log(sum) : std::exp(xs[at] - mx) / sum;
        if (x.dtype() == DType::kFloat) y.data<float>()[at] = static_cast<float>(v);
        else y.data<double>()[at] = v;
      }
    }
  return y;
}

Attribute axis(int64_t a) { return Attribute::make_int("axis", a); }

}  // namespace

TEST_CASE("Softmax/LogSoftmax at opset 13 normalize one axis, any position, negative too",
          "[kernels][Softmax][LogSoftmax]") {
  auto x = random_tensor({2, 3, 4, 5}, 11, -5.f, 5.f);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    bool log = std::string(op) == "LogSoftmax";
    INFO(op);
    require_close(run_node({op, {x}})[0], reference(x, 24, 5, 1, log));  // default axis -1
    require_close(run_node({op, {x}, {axis(3)}})[0], reference(x, 24, 5, 1, log));
    require_close(run_node({op, {x}, {axis(1)}})[0], reference(x, 2, 3, 20, log));
    require_close(run_node({op, {x}, {axis(-3)}})[0], reference(x, 2, 3, 20, log));
    require_close(run_node({op, {x}, {axis(0)}})[0], reference(x, 1, 2, 60, log));
    require_close(run_node({op, {x}, {axis(-2)}, 1, 13})[0], reference(x, 6, 4, 5, log));
  }
}

TEST_CASE("Softmax before opset 13 coerces to 2-D at axis (default 1)", "[kernels][Softmax][LogSoftmax]") {
  auto x = random_tensor({2, 3, 4}, 12, -3.f, 3.f);
  for (int64_t opset : {1, 11}) {
    INFO("opset " << opset);
    require_close(run_node({"Softmax", {x}, {}, 1, opset})[0], reference(x, 2, 12, 1, false));
    require_close(run_node({"Softmax", {x}, {axis(2)}, 1, opset})[0], reference(x, 6, 4, 1, false));
    require_close(run_node({"LogSoftmax", {x}, {axis(0)}, 1, opset})[0], reference(x, 1, 24, 1, true));
    require_close(run_node({"LogSoftmax", {x}, {axis(-2)}, 1, opset})[0], reference(x, 2, 12, 1, true));
  }
  // Same input and axis, different opsets, different results.
  auto s11 = run_node({"Softmax", {x}, {axis(1)}, 1, 11})[0];
  auto s13 = run_node({"Softmax", {x}, {axis(1)}, 1, 13})[0];
  require_close(s13, reference(x, 2, 3, 4, false));
  REQUIRE(s11.data<float>()[0] != Approx(s13.data<float>()[0]));
}

TEST_CASE("Softmax is stable for large logits and keeps -inf rows like the reference", "[kernels][Softmax][LogSoftmax]") {
  auto x = make<float>({2, 2}, {1000, 1001, 0, 0});
  require_close(run_node({"Softmax", {x}, {axis(0)}})[0], make<float>({2, 2}, {1, 1, 0, 0}), 1e-5, 1e-6);
  require_close(run_node({"LogSoftmax", {make<float>({2}, {1000, 1000})}})[0],
                make<float>({2}, {-std::log(2.f), -std::log(2.f)}));
  auto big = make<float>({3}, {-1e30f, 0.f, 88.f});
  require_close(run_node({"LogSoftmax", {big}})[0], reference(big, 1, 3, 1, true), 1e-5, 1e-5);
  // A row with one -inf entry: that entry gets probability 0 (log: -inf).
  Tensor one_inf_row = run_node({"LogSoftmax", {make<float>({2}, {-INFINITY, 0.f})}})[0];
  auto part = one_inf_row.span<float>();
  REQUIRE((std::isinf(part[0]) && part[0] < 0));
  REQUIRE(part[1] == 0.f);
  // An all -inf row is 0/0 in the reference: NaN, not a crash or a made-up distribution.
  Tensor all_inf_row = run_node({"Softmax", {make<float>({2}, {-INFINITY, -INFINITY})}})[0];
  auto s = all_inf_row.span<float>();
  REQUIRE(std::isnan(s[0]));
}

TEST_CASE("Softmax over a wide non-innermost axis and many columns uses several blocks", "[kernels][Softmax][LogSoftmax]") {
  auto x = random_tensor({3, 7, 1500}, 13, -8.f, 8.f);
  require_close(run_node({"Softmax", {x}, {axis(1)}})[0], reference(x, 3, 7, 1500, false));
  require_close(run_node({"LogSoftmax", {x}, {axis(1)}})[0], reference(x, 3, 7, 1500, true));
  auto rows = random_tensor({600, 1000}, 14, -8.f, 8.f);
  require_close(run_node({"Softmax", {rows}})[0], reference(rows, 600, 1000, 1, false));
}

TEST_CASE("Softmax in double, on scalars and on empty tensors", "[kernels][Softmax][LogSoftmax]") {
  auto f = random_tensor({4, 6}, 15, -2.f, 2.f);
  Tensor d = Tensor::host(DType::kDouble, f.dims());
  for (int64_t i = 0; i < f.numel(); ++i) d.data<double>()[i] = f.data<float>()[i];
  require_close(run_node({"Softmax", {d}, {axis(0)}})[0], reference(d, 1, 4, 6, false), 1e-13, 1e-15);
  require_close(run_node({"LogSoftmax", {d}})[0], reference(d, 4, 6, 1, true), 1e-13, 1e-15);
  require_close(run_node({"Softmax", {make<float>({}, {3.f})}})[0], make<float>({}, {1.f}));
  require_close(run_node({"LogSoftmax", {make<float>({}, {3.f})}, {axis(0)}, 1, 11})[0], make<float>({}, {0.f}));
  REQUIRE(run_node({"Softmax", {Tensor::host(DType::kFloat, {0, 3})}})[0].dims() == Dims{0, 3});
  REQUIRE(run_node({"LogSoftmax", {Tensor::host(DType::kFloat, {2, 0})}})[0].dims() == Dims{2, 0});
  REQUIRE(run_node({"Softmax", {Tensor::host(DType::kFloat, {2, 0, 3})}, {axis(1)}, 1, 11})[0].dims() == Dims{2, 0, 3});
}

TEST_CASE("Softmax refuses an axis outside the rank and integer inputs", "[kernels][Softmax]") {
  REQUIRE_FALSE(run_node_error({"Softmax", {random_tensor({2, 3}, 16)}, {axis(2)}}).ok());
  REQUIRE_FALSE(run_node_error({"Softmax", {random_tensor({2, 3}, 16)}, {axis(-3)}}).ok());
  REQUIRE_FALSE(run_node_error({"Softmax", {make<int32_t>({2}, {1, 2})}}).ok());
}
