#include "runtime/plan_placement.h"

#include <algorithm>

#include "graph/op_schema.h"

namespace ort_train {

namespace {

// Whether the outputs' inferred sizes together stay within a host step's
// limit. An output whose size is not known before the run (a symbolic dim)
// counts as too large: the device can take any size, the host only small ones.
bool outputs_fit_on_host(const PlanStep& step, const Graph& g) {
  int64_t total = 0;
  for (const std::string& name : step.node->outputs) {
    if (name.empty()) continue;
    const ValueInfo* v = g.value(name);
    if (!v || !v->shape || !shape_fully_known(*v->shape)) return false;
    total += num_elements(dims_from_shape(*v->shape));
    if (total > kMaxHostStepElements) return false;
  }
  return true;
}

StepPlace choose_place(const PlanStep& step, const Graph& g, const std::vector<bool>& on_host) {
  if (step.schema && (step.schema->traits & kValueFromRule)) return StepPlace::kRule;
  if (!step.host_kernel) return StepPlace::kDevice;
  if (!step.kernel) return StepPlace::kHost;  // no device kernel: the host's, on copies of its inputs
  for (int s : step.inputs)
    if (s >= 0 && !on_host[s]) return StepPlace::kDevice;
  return outputs_fit_on_host(step, g) ? StepPlace::kHost : StepPlace::kDevice;
}

}  // namespace

void place_steps(ExecutionPlan& plan, const Graph& g, const std::vector<bool>& host_copies) {
  const size_t n = plan.slot_names.size();
  // Per slot, as the steps go: readable on the host, and present on the device.
  std::vector<bool> on_host(n, false), on_device(n, false);
  for (int s : plan.constant_slots) {
    on_device[s] = true;
    on_host[s] = static_cast<size_t>(s) < host_copies.size() && host_copies[s];
  }
  for (int s : plan.feed_slots) on_device[s] = true;
  plan.copies.assign(plan.steps.size(), StepCopies{});
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    PlanStep& step = plan.steps[i];
    StepCopies& copies = plan.copies[i];
    step.place = choose_place(step, g, on_host);
    auto fetch = [&](int s) {
      if (on_host[s]) return;
      copies.fetch.push_back(s);
      on_host[s] = true;  // the host copy lives as long as the value
    };
    const uint64_t rule_reads = step.schema ? rule_data_inputs(step.schema->traits) : 0;
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      const int s = step.inputs[k];
      if (s < 0) continue;
      if (step.place == StepPlace::kHost || (k < 16 && ((rule_reads >> k) & 1u))) fetch(s);
      if (step.place == StepPlace::kDevice && !on_device[s] &&
          std::find(copies.upload.begin(), copies.upload.end(), s) == copies.upload.end())
        copies.upload.push_back(s);
    }
    for (int o : step.outputs) {
      if (o < 0) continue;
      on_host[o] = step.place != StepPlace::kDevice;
      on_device[o] = step.place == StepPlace::kDevice;
    }
  }
}

}  // namespace ort_train
