// The measured kernel choice (runtime/kernel_choice.h) with made-up
// candidates whose speeds differ by 10x: it keeps the faster, runs only the
// kept one afterwards, drops a failing one, pins under --deterministic, and
// keeps its choices in a file, and drops a candidate whose outputs disagree
// with the first candidate's.
#include <chrono>
#include <cmath>
#include <fstream>

#include "runtime/kernel_choice.h"
#include "runtime/kernel_choice_fixture.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

TEST_CASE("A measured choice keeps the faster candidate and then runs only it", "[kernel_choice]") {
  Fixture f;
  int slow_calls = 0, fast_calls = 0;
  KernelFn fn = measured_choice(DeviceKind::kCpu, {{"slow", [&](KernelContext&) {
                                                      ++slow_calls;
                                                      spin(4.0);
                                                      return Status::Ok();
                                                    }},
                                                   {"fast", [&](KernelContext&) {
                                                      ++fast_calls;
                                                      spin(0.4);
                                                      return Status::Ok();
                                                    }}});
  REQUIRE(f.run(fn).ok());
  // Each timed 1 + kKernelChoiceRuns times, then the kept one runs for real.
  CHECK(slow_calls == 1 + kKernelChoiceRuns);
  CHECK(fast_calls == 2 + kKernelChoiceRuns);
  auto all = KernelChoices::instance().all();
  REQUIRE(all.size() == 1);
  CHECK(all.begin()->second == "fast");
  CHECK_THAT(all.begin()->first, Catch::StartsWith("MadeUp|cpu"));
  REQUIRE(f.run(fn).ok());
  REQUIRE(f.run(fn).ok());
  CHECK(slow_calls == 1 + kKernelChoiceRuns);
  CHECK(fast_calls == 4 + kKernelChoiceRuns);
}

TEST_CASE("A candidate that fails while timed is dropped, all failing is an error", "[kernel_choice]") {
  Fixture f;
  int ok_calls = 0;
  KernelFn fn = measured_choice(DeviceKind::kCpu,
                                {{"broken", [](KernelContext&) { return invalid_argument("too many keys"); }},
                                 {"works", [&](KernelContext&) {
                                    ++ok_calls;
                                    return Status::Ok();
                                  }}});
  REQUIRE(f.run(fn).ok());
  CHECK(KernelChoices::instance().all().begin()->second == "works");
  CHECK(ok_calls == 2 + kKernelChoiceRuns);

  KernelChoices::instance().clear();
  KernelFn none = measured_choice(DeviceKind::kCpu, {{"a", [](KernelContext&) { return invalid_argument("no A"); }},
                                                     {"b", [](KernelContext&) { return invalid_argument("no B"); }}});
  Status s = f.run(none);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("no A") && Catch::Contains("no B") && Catch::Contains("made_up_0"));
}

TEST_CASE("A candidate whose outputs disagree with the first candidate's is dropped, however fast",
          "[kernel_choice]") {
  Fixture f;
  f.node.outputs = {"y"};
  // Writes y = values with its first element times `first`, after `ms` of work.
  auto candidate = [](float first, double ms) {
    return [first, ms](KernelContext& ctx) {
      spin(ms);
      ctx.set_output(0, Tensor::from_vector<float>({4}, {1.f * first, -2.f, 3.f, 0.5f}));
      return Status::Ok();
    };
  };
  KernelFn wrong = measured_choice(DeviceKind::kCpu, {{"library", candidate(1.f, 4.0)}, {"wrong", candidate(2.f, 0.0)}});
  REQUIRE(f.run(wrong).ok());
  CHECK(KernelChoices::instance().all().begin()->second == "library");
  // float32: another summation order (a few units of rounding) is no
  // disagreement, the faster is kept; a kernel 0.1% off is dropped.
  KernelChoices::instance().clear();
  KernelFn rounded =
      measured_choice(DeviceKind::kCpu, {{"library", candidate(1.f, 4.0)}, {"rounded", candidate(1.0000005f, 0.0)}});
  REQUIRE(f.run(rounded).ok());
  CHECK(KernelChoices::instance().all().begin()->second == "rounded");
  KernelChoices::instance().clear();
  KernelFn off =
      measured_choice(DeviceKind::kCpu, {{"library", candidate(1.f, 4.0)}, {"off", candidate(1.003f, 0.0)}});
  REQUIRE(f.run(off).ok());
  CHECK(KernelChoices::instance().all().begin()->second == "library");
  // 16-bit outputs: their rounding (0.4% here) is no disagreement.
  KernelChoices::instance().clear();
  auto half = [](float first, double ms) {
    return [first, ms](KernelContext& ctx) {
      spin(ms);
      Tensor y = Tensor::host(DType::kBFloat16, {4});
      const float v[4] = {1.f * first, -2.f, 3.f, 0.5f};
      for (int i = 0; i < 4; ++i) y.data<BFloat16>()[i] = BFloat16(v[i]);
      ctx.set_output(0, y);
      return Status::Ok();
    };
  };
  KernelFn half_rounded =
      measured_choice(DeviceKind::kCpu, {{"library", half(1.f, 4.0)}, {"rounded", half(1.004f, 0.0)}});
  REQUIRE(f.run(half_rounded).ok());
  CHECK(KernelChoices::instance().all().begin()->second == "rounded");
}

TEST_CASE("relative_disagreement: the largest difference over the largest magnitude, NaN where the other has none",
          "[kernel_choice]") {
  Tensor a = Tensor::from_vector<float>({3}, {1.f, -4.f, 2.f}), b = Tensor::from_vector<float>({3}, {1.f, -4.f, 2.2f});
  CHECK(relative_disagreement(a, a) == 0.0);
  CHECK(relative_disagreement(b, a) == Approx(0.05).epsilon(1e-5));
  Tensor nan = Tensor::from_vector<float>({3}, {1.f, std::nanf(""), 2.f});
  CHECK(relative_disagreement(nan, nan) == 0.0);
  CHECK(std::isinf(relative_disagreement(nan, a)));
  CHECK(std::isinf(relative_disagreement(a, Tensor::from_vector<float>({2}, {1.f, -4.f}))));
  Tensor ints = Tensor::from_vector<int64_t>({2}, {1, 2}), other = Tensor::from_vector<int64_t>({2}, {1, 3});
  CHECK(relative_disagreement(ints, ints) == 0.0);
  CHECK(relative_disagreement(ints, other) > 0.0);
}

TEST_CASE("Under --deterministic a measured choice runs its first deterministic candidate, untimed",
          "[kernel_choice]") {
  Fixture f;
  KernelChoices::instance().set_deterministic(true);
  int racy = 0, fixed = 0, other = 0;
  KernelFn fn = measured_choice(DeviceKind::kCpu, {{"racy", [&](KernelContext&) { return ++racy, Status::Ok(); }, false},
                                                   {"fixed", [&](KernelContext&) {
                                                      ++fixed;
                                                      spin(2.0);
                                                      return Status::Ok();
                                                    }},
                                                   {"other", [&](KernelContext&) { return ++other, Status::Ok(); }}});
  REQUIRE(f.run(fn).ok());
  REQUIRE(f.run(fn).ok());
  CHECK(racy == 0);
  CHECK(fixed == 2);
  CHECK(other == 0);
  CHECK(KernelChoices::instance().all().empty());
}

TEST_CASE("Kernel choices are kept in a file, for the same device only", "[kernel_choice]") {
  Fixture f;
  Dir dir("ort_train_kernel_choices");
  KernelChoices& kc = KernelChoices::instance();
  kc.keep("Attention|cpu|float[1,2,3,4]", "gemm");
  kc.keep("AttentionGrad|cpu|float[1,2,3,4]", "flash");
  REQUIRE(kc.save(dir / "choices.json", "cpu").ok());
  kc.clear();
  REQUIRE(kc.load(dir / "choices.json", "cuda:0 (another card)").ok());
  CHECK(kc.all().empty());
  REQUIRE(kc.load(dir / "choices.json", "cpu").ok());
  CHECK(kc.find("Attention|cpu|float[1,2,3,4]") == "gemm");
  CHECK(kc.find("AttentionGrad|cpu|float[1,2,3,4]") == "flash");
  // A kept choice is used without timing.
  int a = 0, b = 0;
  kc.clear();
  KernelFn fn = measured_choice(DeviceKind::kCpu, {{"a", [&](KernelContext&) { return ++a, Status::Ok(); }},
                                                   {"b", [&](KernelContext&) { return ++b, Status::Ok(); }}});
  KernelContext ctx(f.node, 17, {}, *f.shapes, *f.alloc, f.options, 0);
  kc.keep(kernel_choice_key(ctx, DeviceKind::kCpu), "b");
  REQUIRE(fn(ctx).ok());
  CHECK(a == 0);
  CHECK(b == 1);
  // A missing file is no error; a damaged one is.
  CHECK(kc.load(dir / "absent.json", "cpu").ok());
  std::ofstream(dir / "bad.json") << "{\"device\": \"cpu\", \"choices\": [1, 2";
  Status s = kc.load(dir / "bad.json", "cpu");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("bad.json"));
}

TEST_CASE("kernel choice: holds_op sees an op's shapes and its own entry, not another op sharing its prefix",
          "[kernel_choice]") {
  KernelChoices& kc = KernelChoices::instance();
  kc.clear();
  CHECK_FALSE(kc.holds_op("MatMul"));
  kc.keep("MatMulInteger|cpu|int8[2,3]", "a");
  kc.keep("MatMu|cpu", "a");
  CHECK_FALSE(kc.holds_op("MatMul"));  // neither "MatMulInteger" nor "MatMu" is MatMul
  kc.keep("MatMul|cpu|float32[2,3]|float32[3,4]|out:1", "onednn");
  CHECK(kc.holds_op("MatMul"));
  CHECK_FALSE(kc.holds_op("Gemm"));
  kc.keep("com.ort_train.ConvGrad", "openblas");  // the op alone: every shape
  CHECK(kc.holds_op("com.ort_train.ConvGrad"));
  CHECK_FALSE(kc.holds_op("ConvGrad"));
  kc.clear();
}
