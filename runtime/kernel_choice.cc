#include "runtime/kernel_choice.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graph/onnx_io.h"
#include "runtime/kernel_choice_detail.h"

namespace ort_train {

using kernel_choice_detail::device_name;
KernelChoices& KernelChoices::instance() {
  static KernelChoices c;
  return c;
}

void KernelChoices::set_measure_at_once(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  measure_at_once_ = on;
}

bool KernelChoices::measure_at_once() const {
  std::lock_guard<std::mutex> lock(mu_);
  return measure_at_once_;
}

void KernelChoices::set_deterministic(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  deterministic_ = on;
}

bool KernelChoices::deterministic() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deterministic_;
}

std::string KernelChoices::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = chosen_.find(key);
  if (it == chosen_.end()) it = chosen_.find(key.substr(0, key.find('|')));  // the op's own entry
  return it == chosen_.end() ? std::string() : it->second;
}

void KernelChoices::keep(const std::string& key, const std::string& candidate) {
  std::lock_guard<std::mutex> lock(mu_);
  chosen_[key] = candidate;
}

std::map<std::string, std::string> KernelChoices::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chosen_;
}

bool KernelChoices::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chosen_.empty();
}

bool KernelChoices::holds_op(const std::string& op) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (chosen_.count(op)) return true;
  auto it = chosen_.lower_bound(op + "|");  // the op's shapes sort together, right after "op|"
  return it != chosen_.end() && it->first.compare(0, op.size() + 1, op + "|") == 0;
}

void KernelChoices::clear() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    chosen_.clear();
  }
  kernel_choice_detail::reset_in_situ_ledger();
}

// File: {"device": "<description>", "choices": {key: candidate, ...}}.
Status KernelChoices::load(const std::string& path, const std::string& device) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::Ok();
  if (!std::filesystem::is_regular_file(path, ec))
    return invalid_argument("kernel choices '{}' is not a regular file", path);
  ASSIGN_OR_RETURN(std::string text, read_file(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("device") || !j["device"].is_string() ||
      !j.contains("choices") || !j["choices"].is_object())
    return invalid_argument("kernel choices '{}' is not a {{\"device\", \"choices\"}} JSON object", path);
  if (j["device"].get<std::string>() != device) {
    spdlog::info("kernel choices in {} were measured on {}, not {}: measuring again", path,
                 j["device"].get<std::string>(), device);
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, value] : j["choices"].items()) {
    if (!value.is_string()) return invalid_argument("kernel choices '{}': '{}' is not a name", path, key);
    chosen_[key] = value.get<std::string>();
  }
  return Status::Ok();
}

Status KernelChoices::save(const std::string& path, const std::string& device, OutputName name) const {
  nlohmann::json j;
  j["device"] = device;
  j["choices"] = nlohmann::json::object();
  for (const auto& [key, name] : all()) j["choices"][key] = name;
  return write_file_atomic(path, j.dump(1) + "\n", name);
}

std::string kernel_choice_op(const Node& n) { return (n.domain.empty() ? "" : n.domain + ".") + n.op_type; }

std::string kernel_choice_key(const KernelContext& ctx, DeviceKind device) {
  const Node& n = ctx.node();
  std::ostringstream k;
  k << kernel_choice_op(n) << "|" << device_name(device);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      k << "|-";
      continue;
    }
    k << "|" << dtype_name(ctx.input(i).dtype()) << dims_to_string(ctx.input(i).dims());
  }
  k << "|out:";
  for (size_t i = 0; i < n.outputs.size(); ++i) k << (ctx.has_output(i) ? '1' : '0');
  // Attributes change the work (k_transposed, a dropout ratio); the seed does not.
  for (const Attribute& a : n.attributes) {
    if (a.name == "seed") continue;
    if (a.type == Attribute::Type::kInt) k << "|" << a.name << "=" << a.i;
    else if (a.type == Attribute::Type::kFloat) k << "|" << a.name << "=" << a.f;
    else if (a.type == Attribute::Type::kString) k << "|" << a.name << "=" << a.s;
    else if (a.type == Attribute::Type::kInts) {
      k << "|" << a.name << "=";
      for (int64_t v : a.ints) k << v << ",";
    }
  }
  return k.str();
}

namespace kernel_choice_detail {

const char* device_name(DeviceKind d) { return d == DeviceKind::kCuda ? "cuda" : "cpu"; }

// A candidate's outputs where the host reads them (through `host_copy` when
// given; outputs the node does not ask for stay undefined).
Result<std::vector<Tensor>> on_host(std::vector<Tensor> outputs, const HostCopyFn& host_copy) {
  if (host_copy)
    for (Tensor& t : outputs)
      if (t.defined()) { ASSIGN_OR_RETURN(t, host_copy(t)); }
  return outputs;
}

// The worst relative_disagreement of host `outputs` with host `reference`,
// and whether every output is within its dtype's kernel_choice_agreement.
std::pair<double, bool> disagreement(const std::vector<Tensor>& outputs, const std::vector<Tensor>& reference) {
  double worst = 0;
  bool agrees = true;
  for (size_t i = 0; i < outputs.size() && i < reference.size(); ++i)
    if (outputs[i].defined() && reference[i].defined()) {
      const double off = relative_disagreement(outputs[i], reference[i]);
      worst = std::max(worst, off);
      agrees = agrees && off <= kernel_choice_agreement(reference[i].dtype());
    }
  return {worst, agrees};
}

const KernelCandidate* by_name(const std::vector<KernelCandidate>& cs, const std::string& name) {
  for (const KernelCandidate& c : cs)
    if (c.name == name) return &c;
  return nullptr;
}

Result<const KernelCandidate*> pinned_or_kept(const std::vector<KernelCandidate>& cs, const KernelContext& ctx,
                                              DeviceKind device, const std::string& key) {
  KernelChoices& choices = KernelChoices::instance();
  if (choices.deterministic()) {
    for (const KernelCandidate& c : cs)
      if (c.deterministic) return &c;
    return unsupported("{}: no deterministic kernel on {} (--deterministic)", ctx.node().describe(),
                       device_name(device));
  }
  return by_name(cs, choices.find(key));
}

void log_choice(const KernelContext& ctx, DeviceKind device, const std::string& report, const std::string& name,
                bool log_at_debug) {
  spdlog::log(log_at_debug ? spdlog::level::debug : spdlog::level::info, "kernel choice: {} on {} {} ->{}; using {}",
              ctx.node().op_type, device_name(device),
              ctx.has_input(0) ? dims_to_string(ctx.input(0).dims()) : std::string(), report, name);
}

Result<double> timed_run(const KernelFn& fn, KernelContext& ctx, const std::function<Status()>& wait) {
  if (wait) RETURN_IF_ERROR(wait());
  const auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(fn(ctx));
  if (wait) RETURN_IF_ERROR(wait());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

namespace {

struct Timed {
  double ms;                    // the fastest run
  std::vector<Tensor> outputs;  // the last run's
};

// The fastest of `runs` runs of `c` into fresh outputs, in ms; an error when it fails.
Result<Timed> time_candidate(const KernelCandidate& c, const KernelContext& ctx, const std::function<Status()>& wait) {
  Timed t{std::numeric_limits<double>::infinity(), {}};
  // One untimed run first: first-touch page faults, cuBLAS's heuristics and
  // the caching allocator's first allocations are not the kernel's speed.
  for (int r = 0; r <= kKernelChoiceRuns; ++r) {
    KernelContext scratch = ctx.with_fresh_outputs();
    ASSIGN_OR_RETURN(double ms, timed_run(c.fn, scratch, wait));
    if (r > 0) t.ms = std::min(t.ms, ms);
    if (r == kKernelChoiceRuns) t.outputs = std::move(scratch.outputs());
  }
  return t;
}

}  // namespace

Result<const KernelCandidate*> choose_at_once(const std::vector<KernelCandidate>& cs, KernelContext& ctx,
                                              DeviceKind device, const std::function<Status()>& wait,
                                              const HostCopyFn& host_copy, bool log_at_debug) {
  std::string key = kernel_choice_key(ctx, device);
  ASSIGN_OR_RETURN(const KernelCandidate* pinned, pinned_or_kept(cs, ctx, device, key));
  if (pinned) return pinned;
  const KernelCandidate* best = nullptr;
  double best_ms = std::numeric_limits<double>::infinity();
  std::string report;
  std::vector<Tensor> reference;  // the first candidate that ran, on the host: what the others must agree with
  std::string reference_name;
  std::vector<Status> failures;
  for (const KernelCandidate& c : cs) {
    Result<Timed> timed = time_candidate(c, ctx, wait);
    if (!timed.ok()) {
      failures.push_back(timed.status());
      report += fmt::format(" {} failed ({})", c.name, timed.status().message());
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<Tensor> outputs, on_host(std::move(timed->outputs), host_copy));
    if (reference_name.empty()) {
      reference = std::move(outputs);
      reference_name = c.name;
    } else {
      auto [off, agrees] = disagreement(outputs, reference);
      if (!agrees) {
        report += dropped_for_disagreeing(ctx, device, c.name, reference_name, off);
        continue;
      }
    }
    report += fmt::format(" {} {:.3f} ms", c.name, timed->ms);
    // A later candidate must beat the kept one by 3%: timing noise alone does not switch.
    if (!best || timed->ms < best_ms * kKeepUnlessFaster) {
      best = &c;
      best_ms = timed->ms;
    }
  }
  if (!best) {
    // Every candidate refused the inputs (a shape no kernel takes): one error
    // when they all said the same (one kernel under two GEMM libraries), with
    // the first's code either way, so a shape error stays one.
    const bool same = !failures.empty() && std::all_of(failures.begin(), failures.end(), [&](const Status& f) {
      return f.message() == failures.front().message();
    });
    if (same) return failures.front();
    return make_error(failures.empty() ? ErrorCode::kInternal : failures.front().code(), "{}: every kernel failed:{}",
                      ctx.node().describe(), report);
  }
  KernelChoices::instance().keep(key, best->name);
  log_choice(ctx, device, report, best->name, log_at_debug);
  return best;
}

std::string dropped_for_disagreeing(const KernelContext& ctx, DeviceKind device, const std::string& name,
                                    const std::string& reference_name, double off) {
  spdlog::warn("kernel choice: {} {} on {} disagrees with {} ({:.2g} of the largest output); not used",
               ctx.node().op_type, name, device_name(device), reference_name, off);
  return fmt::format(" {} dropped (disagrees with {}: {:.2g} of the largest output)", name, reference_name, off);
}

}  // namespace kernel_choice_detail

KernelFn measured_choice(DeviceKind device, std::vector<KernelCandidate> candidates, std::function<Status()> wait,
                         HostCopyFn host_copy, bool log_at_debug, Measuring measuring) {
  using namespace kernel_choice_detail;
  std::shared_ptr<InSituKeys> in_situ = measuring == Measuring::kInSitu ? make_in_situ_keys() : nullptr;
  return [device, cs = std::move(candidates), wait = std::move(wait), host_copy = std::move(host_copy), log_at_debug,
          in_situ](KernelContext& ctx) -> Status {
    if (in_situ && !KernelChoices::instance().measure_at_once())
      return run_in_situ(cs, *in_situ, ctx, device, wait, host_copy, log_at_debug);
    ASSIGN_OR_RETURN(const KernelCandidate* c, choose_at_once(cs, ctx, device, wait, host_copy, log_at_debug));
    return c->fn(ctx);
  };
}

double relative_disagreement(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return std::numeric_limits<double>::infinity();
  if (!dtype_is_float(a.dtype())) return std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0 ? 0.0 : 1.0;
  std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    bool fx = std::isfinite(x[i]), fy = std::isfinite(y[i]);
    if (fx != fy || (!fx && !(std::isnan(x[i]) && std::isnan(y[i])) && x[i] != y[i]))
      return std::numeric_limits<double>::infinity();
    if (!fx) continue;
    diff = std::max(diff, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return diff == 0 ? 0.0 : diff / scale;
}

}  // namespace ort_train
