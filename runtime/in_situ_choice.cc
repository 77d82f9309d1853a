// In-situ measuring of a kernel choice (runtime/kernel_choice.h): a key's
// calls are its timings, so a first step pays for the measuring only what
// kInSituBudget allows. Every call still computes its real outputs by one
// candidate; a candidate computes them only once its gate run, into scratch
// outputs beside the reference's real run, agreed with the reference.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "runtime/kernel_choice_detail.h"

namespace ort_train {
namespace kernel_choice_detail {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// A gate's cost guessed before it runs, over the reference's time.
constexpr double kGateGuess = 1.5;
// What a candidate's first gate in the process adds to that guess: it starts
// its library (oneDNN's first call: about 25 ms on an idle machine here, 100
// on a busy one). So the first gate waits until the budget holds it, and a
// model of microsecond GEMMs, which would never repay it, never pays it.
constexpr double kStartGuessMs = 30.0;

// One candidate's record under one key.
struct Trial {
  std::vector<double> ms;  // its real runs' times
  bool gated = false;      // its outputs agreed with the reference's (the reference's: by definition)
  bool dropped = false;
  std::string note;      // why it was dropped, for the choice's report
  double gate_ms = kNever;  // its gate run's time (a cold run): its guess until it has runs
  double fastest() const { return ms.empty() ? kNever : *std::min_element(ms.begin(), ms.end()); }
  double guess() const { return ms.empty() ? gate_ms : fastest(); }
  bool usable() const { return gated && !dropped && !ms.empty(); }
};

struct KeyUnderWay {
  std::vector<Trial> trials;  // by candidate; 0 is the reference
  bool busy = false;          // a call is measuring it; a concurrent one runs the fastest so far
};

// What one call runs: `candidate` computes the real outputs, unless `gate`,
// where it runs into scratch outputs and the reference computes the real ones.
struct CallPlan {
  size_t candidate = 0;
  bool gate = false;
};

std::mutex g_ledger_mu;
InSituLedger g_ledger;
std::set<std::string> g_started;  // candidates gated at least once in this process (their library started)
uint64_t g_generation = 0;         // reset_in_situ_ledger's count: keys under way from before it are forgotten

InSituLedger ledger() {
  std::lock_guard<std::mutex> lock(g_ledger_mu);
  return g_ledger;
}

void add_to_ledger(double calls_ms, double added_ms) {
  std::lock_guard<std::mutex> lock(g_ledger_mu);
  g_ledger.calls_ms += calls_ms;
  g_ledger.added_ms += added_ms;
}

void count_shapes_measuring(int64_t change) {
  std::lock_guard<std::mutex> lock(g_ledger_mu);
  g_ledger.shapes_measuring += change;
}

bool started(const std::string& candidate) {
  std::lock_guard<std::mutex> lock(g_ledger_mu);
  return g_started.count(candidate) > 0;
}

void add_gate_to_ledger(const std::string& candidate, double calls_ms, double gate_ms) {
  std::lock_guard<std::mutex> lock(g_ledger_mu);
  g_started.insert(candidate);
  g_ledger.calls_ms += calls_ms;
  g_ledger.added_ms += gate_ms;
}

size_t fastest_so_far(const KeyUnderWay& k) {
  size_t best = 0;
  for (size_t c = 1; c < k.trials.size(); ++c)
    if (k.trials[c].usable() && k.trials[c].fastest() < k.trials[best].fastest() * kKeepUnlessFaster) best = c;
  return best;
}

// The next call's plan: the reference's first two runs; else a candidate's gate or
// one more of its runs when the budget has room for what it adds (a gate all
// of the candidate's time, guessed at 1.5x the reference's, and 30 ms more
// for the process's first gate of that candidate, until known; a real
// run what it takes beyond the reference); else the reference until it has its
// runs, then the fastest so far.
CallPlan next_call(const KeyUnderWay& k, const std::vector<KernelCandidate>& cs) {
  const Trial& reference = k.trials[0];
  // Its first run is cold (first-touch page faults): a poor guess of what a
  // gate costs, and a first step would pay for every shape's gate at once.
  if (reference.ms.size() < 2) return {0, false};
  const double reference_ms = reference.fastest();
  const InSituLedger l = ledger();
  const double room = kInSituBudget * l.calls_ms - l.added_ms;
  for (size_t c = 1; c < k.trials.size(); ++c) {
    const Trial& t = k.trials[c];
    if (t.dropped) continue;
    if (!t.gated && kGateGuess * reference_ms + (started(cs[c].name) ? 0.0 : kStartGuessMs) <= room)
      return {c, true};
    if (t.gated && t.ms.size() < static_cast<size_t>(kKernelChoiceRuns) &&
        std::max(0.0, t.guess() - reference_ms) <= room)
      return {c, false};
  }
  if (reference.ms.size() < static_cast<size_t>(kKernelChoiceRuns)) return {0, false};
  return {fastest_so_far(k), false};
}

bool decided(const KeyUnderWay& k) {
  for (const Trial& t : k.trials)
    if (!t.dropped && (!t.gated || t.ms.size() < static_cast<size_t>(kKernelChoiceRuns))) return false;
  return true;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

struct InSituKeys {
  std::mutex mu;
  std::map<std::string, KeyUnderWay> keys;
  uint64_t generation = 0;
};

std::shared_ptr<InSituKeys> make_in_situ_keys() { return std::make_shared<InSituKeys>(); }

void reset_in_situ_ledger() {
  std::lock_guard<std::mutex> lock(g_ledger_mu);
  g_ledger = {};
  g_started.clear();
  ++g_generation;
}

namespace {

uint64_t generation() {
  std::lock_guard<std::mutex> lock(g_ledger_mu);
  return g_generation;
}

// Keeps the key's choice once every candidate left has its runs, and logs it.
void keep_if_decided(const std::vector<KernelCandidate>& cs, KeyUnderWay& k, const std::string& key,
                     const KernelContext& ctx, DeviceKind device, bool log_at_debug) {
  if (!decided(k)) return;
  const size_t best = fastest_so_far(k);
  std::string report;
  for (size_t c = 0; c < cs.size(); ++c)
    report += k.trials[c].dropped ? k.trials[c].note : fmt::format(" {} {:.3f} ms", cs[c].name, k.trials[c].fastest());
  const InSituLedger l = ledger();
  report += fmt::format(" (in situ; measuring has added {:.1f} ms to {:.1f} ms of calls)", l.added_ms, l.calls_ms);
  KernelChoices::instance().keep(key, cs[best].name);
  log_choice(ctx, device, report, cs[best].name, log_at_debug);
}

// A gate: candidate `c` into scratch outputs, then the reference into the
// real ones, and whether they agree. The reference's failure is the call's.
Status gate(const std::vector<KernelCandidate>& cs, size_t c, InSituKeys& keys, const std::string& key,
            KernelContext& ctx, DeviceKind device, const std::function<Status()>& wait, const HostCopyFn& host_copy) {
  const auto start = std::chrono::steady_clock::now();
  KernelContext scratch = ctx.with_fresh_outputs();
  // The candidate first: the reference may write its output over an input.
  Result<double> candidate_ms = timed_run(cs[c].fn, scratch, wait);
  const double candidate_took = ms_since(start);
  Result<double> reference_ms = timed_run(cs[0].fn, ctx, wait);
  if (!reference_ms.ok()) return reference_ms.status();
  const auto compare_start = std::chrono::steady_clock::now();
  std::string note;
  if (!candidate_ms.ok()) {
    note = fmt::format(" {} failed ({})", cs[c].name, candidate_ms.status().message());
  } else {
    ASSIGN_OR_RETURN(std::vector<Tensor> outputs, on_host(std::move(scratch.outputs()), host_copy));
    ASSIGN_OR_RETURN(std::vector<Tensor> reference, on_host(ctx.outputs(), host_copy));
    auto [off, agrees] = disagreement(outputs, reference);
    if (!agrees) note = dropped_for_disagreeing(ctx, device, cs[c].name, cs[0].name, off);
  }
  add_gate_to_ledger(cs[c].name, *reference_ms, candidate_took + ms_since(compare_start));
  std::lock_guard<std::mutex> lock(keys.mu);
  KeyUnderWay& k = keys.keys[key];
  k.trials[0].ms.push_back(*reference_ms);
  k.trials[c].gated = note.empty();
  k.trials[c].dropped = !note.empty();
  k.trials[c].note = note;
  if (candidate_ms.ok()) k.trials[c].gate_ms = *candidate_ms;
  return Status::Ok();
}

}  // namespace

Status run_in_situ(const std::vector<KernelCandidate>& cs, InSituKeys& keys, KernelContext& ctx, DeviceKind device,
                   const std::function<Status()>& wait, const HostCopyFn& host_copy, bool log_at_debug) {
  const std::string key = kernel_choice_key(ctx, device);
  ASSIGN_OR_RETURN(const KernelCandidate* pinned, pinned_or_kept(cs, ctx, device, key));
  if (pinned) return pinned->fn(ctx);
  CallPlan plan;
  bool reference_first = false;  // this call is the reference's first run for the key
  const KernelCandidate* concurrent = nullptr;  // another call measures the key: run the fastest so far
  {
    std::lock_guard<std::mutex> lock(keys.mu);
    if (const uint64_t now = generation(); keys.generation != now) {  // KernelChoices::clear() since
      keys.keys.clear();
      keys.generation = now;
    }
    KeyUnderWay& k = keys.keys[key];
    if (k.trials.empty()) {
      k.trials.resize(cs.size());
      k.trials[0].gated = true;
      count_shapes_measuring(+1);
    }
    if (k.busy) {
      concurrent = &cs[fastest_so_far(k)];
    } else {
      plan = next_call(k, cs);
      reference_first = k.trials[0].ms.empty();
      k.busy = true;
    }
  }
  if (concurrent) return concurrent->fn(ctx);  // outside the lock: a kernel may take long
  auto done = [&](bool forget) {
    std::lock_guard<std::mutex> lock(keys.mu);
    KeyUnderWay& k = keys.keys[key];
    if (k.trials.empty()) {  // forgotten while this call ran (KernelChoices::clear, tests)
      keys.keys.erase(key);
      return;
    }
    k.busy = false;
    if (!forget) keep_if_decided(cs, k, key, ctx, device, log_at_debug);
    if (forget || decided(k)) {
      keys.keys.erase(key);
      count_shapes_measuring(-1);
    }
  };
  if (plan.gate) {
    Status s = gate(cs, plan.candidate, keys, key, ctx, device, wait, host_copy);
    done(false);
    return s;
  }
  Result<double> ms = timed_run(cs[plan.candidate].fn, ctx, wait);
  if (!ms.ok() && plan.candidate == 0) {
    done(/*forget=*/true);
    if (!reference_first) return ms.status();
    // The reference refuses these inputs: every candidate timed at once, as
    // on other devices (another may take them, or all fail with one error).
    ASSIGN_OR_RETURN(const KernelCandidate* c, choose_at_once(cs, ctx, device, wait, host_copy, log_at_debug));
    return c->fn(ctx);
  }
  double reference_ms;
  {
    std::lock_guard<std::mutex> lock(keys.mu);
    KeyUnderWay& k = keys.keys[key];
    Trial& t = k.trials[plan.candidate];
    if (ms.ok()) t.ms.push_back(*ms);
    else {
      t.dropped = true;  // a gated candidate failed later (out of memory): the reference computes the call
      t.note = fmt::format(" {} failed ({})", cs[plan.candidate].name, ms.status().message());
    }
    reference_ms = k.trials[0].fastest();
  }
  if (!ms.ok()) {
    done(false);
    return cs[0].fn(ctx);
  }
  // What a candidate's real run added, or saved, against the reference's time.
  add_to_ledger(*ms, plan.candidate == 0 ? 0.0 : *ms - reference_ms);
  done(false);
  return Status::Ok();
}

}  // namespace kernel_choice_detail

InSituLedger in_situ_ledger() { return kernel_choice_detail::ledger(); }

}  // namespace ort_train
