// The kernel choice measured in situ (runtime/kernel_choice.h, Measuring::kInSitu;
// what --gemm-library measured uses): the run's own calls are the timings, a
// candidate computes real outputs only after its gate agreed with the
// reference, and what measuring adds stays within kInSituBudget of the calls'
// time, so a first call costs nothing more than the reference.
#include <algorithm>

#include "runtime/kernel_choice.h"
#include "runtime/kernel_choice_fixture.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// Writes y = {first, -2, 3, 0.5} after `ms` of work, counting its calls.
KernelFn writes_y(float first, double ms, int& calls) {
  return [first, ms, &calls](KernelContext& ctx) {
    ++calls;
    spin(ms);
    ctx.set_output(0, Tensor::from_vector<float>({4}, {first, -2.f, 3.f, 0.5f}));
    return Status::Ok();
  };
}

// Calls `fn` until a choice is kept (at most `limit` calls); how many it took.
int calls_until_kept(Fixture& f, const KernelFn& fn, int limit) {
  for (int i = 1; i <= limit; ++i) {
    REQUIRE(f.run(fn).ok());
    if (!KernelChoices::instance().all().empty()) return i;
  }
  return -1;
}

}  // namespace

TEST_CASE("In situ, a first call runs only the reference, and the faster candidate is kept within the budget",
          "[kernel_choice][in_situ]") {
  Fixture f;
  f.node.outputs = {"y"};
  int reference = 0, fast = 0;
  KernelFn fn = measured_choice(DeviceKind::kCpu, {{"library", writes_y(1.f, 2.0, reference)},
                                                   {"fast", writes_y(1.f, 0.2, fast)}},
                                {}, {}, false, Measuring::kInSitu);
  REQUIRE(f.run(fn).ok());
  CHECK(reference == 1);
  CHECK(fast == 0);  // nothing beside the reference until 10% of the calls' time pays for a gate
  // (the first in the process guessed with 30 ms for its library's start: about 165 calls of 2 ms)
  const int calls = calls_until_kept(f, fn, 1000);
  REQUIRE(calls > 0);
  CHECK(KernelChoices::instance().all().begin()->second == "fast");
  // Its gate, then its runs: never more than the runs a choice needs.
  CHECK(fast == 1 + kKernelChoiceRuns);
  const InSituLedger l = in_situ_ledger();
  CHECK(l.calls_ms > 0);
  CHECK(l.added_ms <= kInSituBudget * l.calls_ms);
  // Kept: only it runs, untimed.
  REQUIRE(f.run(fn).ok());
  CHECK(fast == 2 + kKernelChoiceRuns);
  CHECK(in_situ_ledger().calls_ms == l.calls_ms);
}

TEST_CASE("In situ, a slower candidate adds at most the budget and one guess, and the reference is kept",
          "[kernel_choice][in_situ]") {
  Fixture f;
  f.node.outputs = {"y"};
  int reference = 0, slow = 0;
  KernelFn fn = measured_choice(DeviceKind::kCpu, {{"library", writes_y(1.f, 0.5, reference)},
                                                   {"slow", writes_y(1.f, 3.0, slow)}},
                                {}, {}, false, Measuring::kInSitu);
  double worst_excess = 0;
  for (int i = 0; i < 3000 && KernelChoices::instance().all().empty(); ++i) {
    REQUIRE(f.run(fn).ok());
    const InSituLedger l = in_situ_ledger();
    worst_excess = std::max(worst_excess, l.added_ms - kInSituBudget * l.calls_ms);
  }
  REQUIRE(!KernelChoices::instance().all().empty());
  CHECK(KernelChoices::instance().all().begin()->second == "library");
  // A gate's time is guessed (1.5x the reference's, 30 ms more for a
  // candidate's first) before it is known: the ledger may pass the budget by
  // one candidate run, never by more.
  CHECK(worst_excess <= 3.0 * 2);
}

TEST_CASE("In situ, a candidate 0.1% off is gated out and every call's outputs are the reference's",
          "[kernel_choice][in_situ]") {
  Fixture f;
  f.node.outputs = {"y"};
  int reference = 0, off = 0;
  KernelFn fn = measured_choice(DeviceKind::kCpu, {{"library", writes_y(1.f, 1.0, reference)},
                                                   {"off", writes_y(1.001f, 0.0, off)}},
                                {}, {}, false, Measuring::kInSitu);
  for (int i = 0; i < 500; ++i) {
    auto y = f.outputs_of(fn);
    REQUIRE(y.ok());
    REQUIRE(y->at(0).data<float>()[0] == 1.f);
  }
  CHECK(off == 1);  // its gate alone
  auto all = KernelChoices::instance().all();
  REQUIRE(all.size() == 1);
  CHECK(all.begin()->second == "library");
}

TEST_CASE("In situ, a candidate that fails its gate is dropped, and a reference that refuses the inputs is the error",
          "[kernel_choice][in_situ]") {
  Fixture f;
  int reference = 0;
  KernelFn fn = measured_choice(DeviceKind::kCpu,
                                {{"library", [&](KernelContext&) { return ++reference, spin(1.0), Status::Ok(); }},
                                 {"broken", [](KernelContext&) { return invalid_argument("too many keys"); }}},
                                {}, {}, false, Measuring::kInSitu);
  REQUIRE(calls_until_kept(f, fn, 1000) > 0);
  CHECK(KernelChoices::instance().all().begin()->second == "library");
  KernelChoices::instance().clear();
  KernelFn refused = measured_choice(DeviceKind::kCpu,
                                     {{"library", [](KernelContext&) { return invalid_argument("rank 5 input"); }},
                                      {"other", [](KernelContext&) { return invalid_argument("rank 5 input"); }}},
                                     {}, {}, false, Measuring::kInSitu);
  Status s = f.run(refused);
  CHECK(!s.ok());
  CHECK_THAT(s.message(), Catch::Contains("rank 5 input"));
}

TEST_CASE("In situ measuring is measured at once where asked (rank 0's agreement run), pinned under --deterministic",
          "[kernel_choice][in_situ]") {
  Fixture f;
  int slow = 0, fast = 0;
  auto counting = [](int& calls, double ms) {
    return [&calls, ms](KernelContext&) { return ++calls, spin(ms), Status::Ok(); };
  };
  KernelFn fn = measured_choice(DeviceKind::kCpu, {{"slow", counting(slow, 2.0)}, {"fast", counting(fast, 0.2)}}, {},
                                {}, false, Measuring::kInSitu);
  KernelChoices::instance().set_measure_at_once(true);
  REQUIRE(f.run(fn).ok());
  KernelChoices::instance().set_measure_at_once(false);
  CHECK(slow == 1 + kKernelChoiceRuns);
  CHECK(fast == 2 + kKernelChoiceRuns);
  CHECK(KernelChoices::instance().all().begin()->second == "fast");
  KernelChoices::instance().clear();
  KernelChoices::instance().set_deterministic(true);
  slow = fast = 0;
  for (int i = 0; i < 50; ++i) REQUIRE(f.run(fn).ok());
  CHECK(slow == 50);
  CHECK(fast == 0);
  CHECK(KernelChoices::instance().all().empty());
}
