// MatMul/Gemm/Conv/pools against naive reference loops written here.
#include "runtime/cpu/parallel.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// Naive batched matmul with numpy broadcasting over one leading batch dim.
Tensor naive_matmul(const Tensor& a, const Tensor& b, int64_t batch, bool b_shared) {
  int64_t m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
  Tensor out = Tensor::host(DType::kFloat, {batch, m, n});
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += a.data<float>()[(t * m + i) * k + p] * b.data<float>()[((b_shared ? 0 : t) * k + p) * n + j];
        out.data<float>()[(t * m + i) * n + j] = static_cast<float>(s);
      }
  return out;
}

}  // namespace

TEST_CASE("MatMul: shared B folds the batch, broadcast batches, 1-D operands", "[kernels][MatMul]") {
  auto a = random_tensor({3, 4, 5}, 1), b = random_tensor({5, 6}, 2);
  require_close(run_node({"MatMul", {a, b}})[0], naive_matmul(a, b, 3, true), 1e-5, 1e-5);
  auto b3 = random_tensor({3, 5, 6}, 3);
  require_close(run_node({"MatMul", {a, b3}})[0], naive_matmul(a, b3, 3, false), 1e-5, 1e-5);
  auto a1 = random_tensor({1, 4, 5}, 4);  // broadcasts against B's batch of 3
  auto bb = run_node({"MatMul", {a1, b3}})[0];
  REQUIRE(bb.dims() == Dims{3, 4, 6});
  auto v = make<float>({2}, {1, 2});
  require_close(run_node({"MatMul", {v, make<float>({2, 2}, {1, 2, 3, 4})}})[0], make<float>({2}, {7, 10}));
  require_close(run_node({"MatMul", {make<float>({2, 2}, {1, 2, 3, 4}), v}})[0], make<float>({2}, {5, 11}));
  require_close(run_node({"MatMul", {v, v}})[0], make<float>({}, {5}));
  REQUIRE(run_node({"MatMul", {Tensor::host(DType::kFloat, {2, 0}), Tensor::host(DType::kFloat, {0, 3})}})[0]
              .to_double_vector() == std::vector<double>(6, 0.0));
  REQUIRE(run_node_error({"MatMul", {a, random_tensor({4, 6}, 5)}}).code() == ErrorCode::kShape);
}

TEST_CASE("Batched MatMul (attention's per-head products) threads across the batch: right, and the same bits at any "
          "thread count", "[kernels][MatMul]") {
  // [batch 2, heads 4, seq 33, head 16]: small GEMMs, which the kernel hands
  // one per thread rather than splitting each one.
  auto q = random_tensor({2, 4, 33, 16}, 11), kt = random_tensor({2, 4, 16, 33}, 12);
  int threads = cpu_threads();
  std::vector<Tensor> by_threads;
  for (int t : {1, 2, 3}) {
    set_cpu_threads(t);
    by_threads.push_back(run_node({"MatMul", {q, kt}})[0]);
  }
  set_cpu_threads(threads);
  REQUIRE(by_threads[0].dims() == Dims{2, 4, 33, 33});
  require_close(by_threads[0].reshaped({8, 33, 33}), naive_matmul(q.reshaped({8, 33, 16}), kt.reshaped({8, 16, 33}), 8, false),
                1e-5, 1e-5);
  for (size_t i = 1; i < by_threads.size(); ++i)
    REQUIRE(by_threads[i].to_double_vector() == by_threads[0].to_double_vector());
}

TEST_CASE("Gemm with transposes, alpha/beta and broadcast C", "[kernels][Gemm]") {
  auto a = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});  // used transposed: [3,2]
  auto b = make<float>({2, 3}, {1, 0, 1, 0, 1, 0});  // used as is: [2,3]
  auto y = run_node({"Gemm", {a, b, make<float>({3}, {1, 1, 1})},
                     {Attribute::make_int("transA", 1), Attribute::make_float("alpha", 2), Attribute::make_float("beta", 0.5f)}});
  // A^T [3,2] x B [2,3]: rows (1,4),(2,5),(3,6)
  require_close(y[0], make<float>({3, 3}, {2.5f, 8.5f, 2.5f, 4.5f, 10.5f, 4.5f, 6.5f, 12.5f, 6.5f}));
  auto d = run_node({"Gemm", {make<double>({1, 2}, {1, 2}), make<double>({3, 2}, {1, 1, 2, 2, 3, 3})},
                     {Attribute::make_int("transB", 1)}});
  require_close(d[0], make<double>({1, 3}, {3, 6, 9}));
}

TEST_CASE("Conv: padding, stride, dilation and groups against a naive loop", "[kernels][Conv]") {
  auto x = random_tensor({2, 4, 7, 6}, 7), w = random_tensor({6, 2, 3, 2}, 8), bias = random_tensor({6}, 9);
  std::vector<Attribute> attrs{Attribute::make_int("group", 2), Attribute::make_ints("strides", {2, 1}),
                               Attribute::make_ints("dilations", {1, 2}), Attribute::make_ints("pads", {1, 0, 0, 1})};
  auto y = run_node({"Conv", {x, w, bias}, attrs})[0];
  // out H = (7+1-3)/2+1 = 3, W = (6+1-3)/1+1 = 5
  REQUIRE(y.dims() == Dims{2, 6, 3, 5});
  Tensor ref = Tensor::host(DType::kFloat, y.dims());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t m = 0; m < 6; ++m)
      for (int64_t oh = 0; oh < 3; ++oh)
        for (int64_t ow = 0; ow < 5; ++ow) {
          double s = bias.data<float>()[m];
          int64_t g = m / 3;
          for (int64_t c = 0; c < 2; ++c)
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 2; ++kw) {
                int64_t ih = oh * 2 - 1 + kh, iw = ow - 0 + kw * 2;
                if (ih < 0 || ih >= 7 || iw < 0 || iw >= 6) continue;
                s += x.data<float>()[((n * 4 + g * 2 + c) * 7 + ih) * 6 + iw] *
                     w.data<float>()[((m * 2 + c) * 3 + kh) * 2 + kw];
              }
          ref.data<float>()[((n * 6 + m) * 3 + oh) * 5 + ow] = static_cast<float>(s);
        }
  require_close(y, ref, 1e-4, 1e-5);
  auto same = run_node({"Conv", {random_tensor({1, 1, 5}, 1), random_tensor({1, 1, 3}, 2)},
                        {Attribute::make_string("auto_pad", "SAME_UPPER"), Attribute::make_ints("strides", {2})}})[0];
  REQUIRE(same.dims() == Dims{1, 1, 3});
}

TEST_CASE("ConvGrad threads across images: dW against a naive sum, and the same bits at any thread count",
          "[kernels][ConvGrad]") {
  // 10 images split into 8 fixed chunks for dW (uneven), two groups.
  auto dy = random_tensor({10, 6, 4, 4}, 21), x = random_tensor({10, 4, 6, 5}, 22), w = random_tensor({6, 2, 3, 2}, 23);
  NodeSpec spec{"ConvGrad", {dy, x, w}, {Attribute::make_int("group", 2)}, 3};
  spec.domain = kOrtTrainDomain;
  int threads = cpu_threads();
  std::vector<std::vector<Tensor>> by_threads;
  for (int t : {1, 2, 3}) {
    set_cpu_threads(t);
    by_threads.push_back(run_node(spec));
  }
  set_cpu_threads(threads);
  Tensor ref = Tensor::host(DType::kFloat, w.dims());
  for (int64_t m = 0; m < 6; ++m)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 2; ++kw) {
          double s = 0;
          for (int64_t n = 0; n < 10; ++n)
            for (int64_t oh = 0; oh < 4; ++oh)
              for (int64_t ow = 0; ow < 4; ++ow)
                s += dy.data<float>()[((n * 6 + m) * 4 + oh) * 4 + ow] *
                     x.data<float>()[((n * 4 + (m / 3) * 2 + c) * 6 + oh + kh) * 5 + ow + kw];
          ref.data<float>()[((m * 2 + c) * 3 + kh) * 2 + kw] = static_cast<float>(s);
        }
  require_close(by_threads[0][1], ref, 1e-4, 1e-5);
  for (size_t i = 1; i < by_threads.size(); ++i)
    for (size_t o = 0; o < 3; ++o) REQUIRE(by_threads[i][o].to_double_vector() == by_threads[0][o].to_double_vector());
}

TEST_CASE("MaxPool with indices and ceil_mode, AveragePool with and without pads counted", "[kernels][MaxPool][AveragePool]") {
  auto x = make<float>({1, 1, 3, 3}, {1, 2, 3, 4, 9, 6, 7, 8, 5});
  auto mp = run_node({"MaxPool", {x}, {Attribute::make_ints("kernel_shape", {2, 2}), Attribute::make_ints("strides", {2, 2}),
                                       Attribute::make_int("ceil_mode", 1)}, 2});
  require_close(mp[0], make<float>({1, 1, 2, 2}, {9, 6, 8, 5}));
  REQUIRE(mp[1].to_int64_vector() == std::vector<int64_t>{4, 5, 7, 8});
  std::vector<Attribute> avg{Attribute::make_ints("kernel_shape", {3, 3}), Attribute::make_ints("pads", {1, 1, 1, 1})};
  auto a = run_node({"AveragePool", {x}, avg})[0];
  REQUIRE(a.data<float>()[0] == Approx((1 + 2 + 4 + 9) / 4.0));
  avg.push_back(Attribute::make_int("count_include_pad", 1));
  auto b = run_node({"AveragePool", {x}, avg})[0];
  REQUIRE(b.data<float>()[0] == Approx((1 + 2 + 4 + 9) / 9.0));
  require_close(run_node({"GlobalAveragePool", {x}})[0], make<float>({1, 1, 1, 1}, {5}));
  require_close(run_node({"GlobalMaxPool", {x}})[0], make<float>({1, 1, 1, 1}, {9}));
}

TEST_CASE("2-D and 1-D pools (their own loop) agree with the general window walk of a 3-D pool", "[kernels][MaxPool][AveragePool][LpPool]") {
  // A 3-D pool over [N, C, 1, H, W] with a window of height 1 walks the same
  // positions as the 2-D pool over [N, C, H, W], through the general walk.
  auto x = random_tensor({2, 3, 7, 6}, 41);
  auto x5 = x.reshaped({2, 3, 1, 7, 6});
  struct Case { std::string op; std::vector<int64_t> kernel, strides, pads, dilations; int64_t ceil, include_pad, order; };
  std::vector<Case> cases{{"MaxPool", {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0, 0},
                          {"MaxPool", {2, 3}, {1, 2}, {0, 1, 1, 0}, {2, 1}, 1, 0, 1},
                          {"AveragePool", {3, 2}, {2, 1}, {1, 0, 1, 1}, {1, 1}, 1, 0, 0},
                          {"AveragePool", {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 1, 0},
                          {"LpPool", {2, 2}, {1, 1}, {1, 1, 0, 0}, {1, 1}, 0, 0, 0}};
  for (const Case& c : cases) {
    auto attrs = [&](bool three_d) {
      auto lift = [&](std::vector<int64_t> v, int64_t one) {
        if (three_d) v.insert(v.begin(), one);
        return v;
      };
      std::vector<int64_t> pads = c.pads;
      if (three_d) pads = {0, c.pads[0], c.pads[1], 0, c.pads[2], c.pads[3]};
      std::vector<Attribute> a{Attribute::make_ints("kernel_shape", lift(c.kernel, 1)),
                               Attribute::make_ints("strides", lift(c.strides, 1)), Attribute::make_ints("pads", pads)};
      if (c.op != "LpPool") a.push_back(Attribute::make_int("ceil_mode", c.ceil));
      if (c.op == "MaxPool") a.push_back(Attribute::make_ints("dilations", lift(c.dilations, 1)));
      if (c.op == "MaxPool") a.push_back(Attribute::make_int("storage_order", c.order));
      if (c.op == "AveragePool") a.push_back(Attribute::make_int("count_include_pad", c.include_pad));
      return a;
    };
    size_t outs = c.op == "MaxPool" ? 2 : 1;
    auto two = run_node({c.op, {x}, attrs(false), outs, 19});
    auto three = run_node({c.op, {x5}, attrs(true), outs, 19});
    INFO(c.op << " kernel " << c.kernel[0] << "x" << c.kernel[1]);
    REQUIRE(two[0].numel() == three[0].numel());
    REQUIRE(two[0].to_double_vector() == three[0].to_double_vector());
    // Row-major indices name the same element either way; column-major ones
    // (storage_order 1) differ by the trivial dim's place, so compare row-major only.
    if (outs == 2 && c.order == 0) REQUIRE(two[1].to_int64_vector() == three[1].to_int64_vector());
  }
  // 1-D: a [N, C, W] pool against [N, C, 1, W] with a 1xk window.
  auto x3 = random_tensor({2, 2, 9}, 42);
  auto one = run_node({"MaxPool", {x3}, {Attribute::make_ints("kernel_shape", {3}), Attribute::make_ints("strides", {2}),
                                         Attribute::make_ints("pads", {1, 1})}, 2});
  auto flat = run_node({"MaxPool", {x3.reshaped({2, 2, 1, 9})}, {Attribute::make_ints("kernel_shape", {1, 3}),
                        Attribute::make_ints("strides", {1, 2}), Attribute::make_ints("pads", {0, 1, 0, 1})}, 2});
  REQUIRE(one[0].to_double_vector() == flat[0].to_double_vector());
  REQUIRE(one[1].to_int64_vector() == flat[1].to_int64_vector());
}

TEST_CASE("LpPool and GlobalLpPool: (sum of |x|^p)^(1/p), pads adding nothing", "[kernels][LpPool]") {
  auto x = make<float>({1, 1, 2, 2}, {3, -4, 0, 0});
  auto lp = [&](int64_t p, std::vector<int64_t> pads) {
    return run_node({"LpPool", {x}, {Attribute::make_ints("kernel_shape", {2, 2}), Attribute::make_ints("pads", pads),
                                     Attribute::make_int("p", p)}})[0];
  };
  REQUIRE(lp(2, {0, 0, 0, 0}).data<float>()[0] == Approx(5));
  REQUIRE(lp(1, {0, 0, 0, 0}).data<float>()[0] == Approx(7));
  REQUIRE(lp(3, {0, 0, 0, 0}).data<float>()[0] == Approx(std::cbrt(27.0 + 64.0)));
  // Padded by one on every side: 3x3 windows of which the corners see one element each.
  require_close(lp(2, {1, 1, 1, 1}), make<float>({1, 1, 3, 3}, {3, 5, 4, 3, 5, 4, 0, 0, 0}));
  require_close(run_node({"GlobalLpPool", {x}})[0], make<float>({1, 1, 1, 1}, {5}));
  require_close(run_node({"GlobalLpPool", {x}, {Attribute::make_int("p", 1)}})[0], make<float>({1, 1, 1, 1}, {7}));
  Status bad = run_node_error({"LpPool", {x}, {Attribute::make_ints("kernel_shape", {2, 2}), Attribute::make_int("p", 0)}});
  CHECK_THAT(bad.message(), Catch::Matchers::Contains("p must be 1 or more"));
}
