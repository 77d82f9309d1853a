// What the two ways of measuring a kernel choice share (runtime/kernel_choice.h):
// at once (kernel_choice.cc) and in situ (in_situ_choice.cc). Not for other
// callers: they use measured_choice.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/kernel_choice.h"

namespace ort_train::kernel_choice_detail {

// A later candidate must be this much faster than the kept one to replace it:
// timing noise alone does not switch.
inline constexpr double kKeepUnlessFaster = 0.97;

const char* device_name(DeviceKind d);
// A candidate's outputs where the host reads them (through `host_copy` when
// given; outputs the node does not ask for stay undefined).
Result<std::vector<Tensor>> on_host(std::vector<Tensor> outputs, const HostCopyFn& host_copy);
// The worst relative_disagreement of host `outputs` with host `reference`,
// and whether every output is within its dtype's kernel_choice_agreement.
std::pair<double, bool> disagreement(const std::vector<Tensor>& outputs, const std::vector<Tensor>& reference);
const KernelCandidate* by_name(const std::vector<KernelCandidate>& cs, const std::string& name);
// The candidate --deterministic pins, or the one kept for `key`; null when neither.
Result<const KernelCandidate*> pinned_or_kept(const std::vector<KernelCandidate>& cs, const KernelContext& ctx,
                                              DeviceKind device, const std::string& key);
void log_choice(const KernelContext& ctx, DeviceKind device, const std::string& report, const std::string& name,
                bool log_at_debug);
// Warns that `name` disagrees with the reference; the choice's report text for it.
std::string dropped_for_disagreeing(const KernelContext& ctx, DeviceKind device, const std::string& name,
                                    const std::string& reference_name, double off);

// One run of `fn` on ctx, in ms, `wait`ing for queued device work around it.
Result<double> timed_run(const KernelFn& fn, KernelContext& ctx, const std::function<Status()>& wait);

// The candidate for ctx's key: pinned, kept, or every candidate timed now.
Result<const KernelCandidate*> choose_at_once(const std::vector<KernelCandidate>& cs, KernelContext& ctx,
                                              DeviceKind device, const std::function<Status()>& wait,
                                              const HostCopyFn& host_copy, bool log_at_debug);

// One measured_choice's keys being measured in situ (in_situ_choice.cc).
struct InSituKeys;
std::shared_ptr<InSituKeys> make_in_situ_keys();
// Runs ctx by the key's pinned or kept candidate, or as one in-situ measuring
// call (see kernel_choice.h).
Status run_in_situ(const std::vector<KernelCandidate>& cs, InSituKeys& keys, KernelContext& ctx, DeviceKind device,
                   const std::function<Status()>& wait, const HostCopyFn& host_copy, bool log_at_debug);
void reset_in_situ_ledger();

}  // namespace ort_train::kernel_choice_detail
