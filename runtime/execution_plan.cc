#include "runtime/execution_plan.h"

#include <fmt/format.h>

#include "graph/op_schema.h"
#include "graph/shape_inference.h"
#include "runtime/device.h"

namespace ort_train {

Status check_tensor_io(const Graph& g) {
  for (const auto* list : {&g.inputs, &g.outputs})
    for (const ValueInfo& v : *list)
      if (!v.non_tensor_type.empty())
        return unsupported("graph {} '{}' has a non-tensor type (sequence, optional or map), which is not supported",
                           list == &g.inputs ? "input" : "output", v.name);
  return Status::Ok();
}

std::vector<bool> ExecutionPlan::pinned_slots() const {
  std::vector<bool> pinned(slot_names.size(), false);
  for (const auto* list : {&constant_slots, &feed_slots, &output_slots})
    for (int s : *list) pinned[s] = true;
  return pinned;
}

namespace {

// The CPU kernel a GPU executor may run a node with on the host: nodes whose
// outputs are all integers (Shape, Gather of dims, Concat of sizes).
const KernelDef* host_kernel_for(const Graph& g, const Node& n, int64_t opset, DType key) {
  bool integer_outputs = !n.outputs.empty();
  for (const std::string& out : n.outputs) {
    const ValueInfo* v = out.empty() ? nullptr : g.value(out);
    integer_outputs = integer_outputs && (out.empty() || (v && is_integer_or_bool(v->dtype)));
  }
  return integer_outputs ? KernelRegistry::instance().find(n.domain, n.op_type, opset, DeviceKind::kCpu, key)
                         : nullptr;
}

// Each slot is released after the step that reads it last; constants, feeds
// and graph outputs never are. A graph output is final at the step that makes
// it, since values are written once.
void plan_lifetimes(ExecutionPlan& plan) {
  std::vector<int> last_use(plan.slot_names.size(), -1);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    for (int s : plan.steps[i].inputs)
      if (s >= 0) last_use[s] = static_cast<int>(i);
    for (int s : plan.steps[i].outputs)  // an unused output dies where it is made
      if (s >= 0 && last_use[s] < static_cast<int>(i)) last_use[s] = static_cast<int>(i);
  }
  std::vector<bool> pinned = plan.pinned_slots();
  for (size_t s = 0; s < last_use.size(); ++s)
    if (!pinned[s] && last_use[s] >= 0) plan.steps[last_use[s]].release.push_back(static_cast<int>(s));
  std::vector<bool> is_output(plan.slot_names.size(), false);
  for (int s : plan.output_slots) is_output[s] = true;
  // Made outputs are done at their last use (constants and feeds that are
  // also outputs are not the run's to free); each listed once.
  std::vector<bool> listed(plan.slot_names.size(), false);
  for (const auto* list : {&plan.constant_slots, &plan.feed_slots})
    for (int s : *list) listed[s] = true;
  for (int s : plan.output_slots)
    if (!listed[s] && last_use[s] >= 0) {
      plan.steps[last_use[s]].outputs_done.push_back(s);
      listed[s] = true;
    }
  for (PlanStep& step : plan.steps)
    for (int s : step.outputs)
      if (s >= 0 && is_output[s]) {
        step.ready.push_back(s);
        is_output[s] = false;  // listed once even if two outputs share a name
      }
}

}  // namespace

Result<ExecutionPlan> build_execution_plan(const Model& model, DeviceKind device) {
  if (device == DeviceKind::kCuda) has_cuda_kernels();  // loads the CUDA plugin, whose kernels register themselves
  RETURN_IF_ERROR(check_ops_known(model));
  const Graph& g = model.graph;
  RETURN_IF_ERROR(check_tensor_io(g));
  ExecutionPlan plan;
  auto slot_of = [&](const std::string& name) {
    auto [it, inserted] = plan.slots.emplace(name, static_cast<int>(plan.slot_names.size()));
    if (inserted) plan.slot_names.push_back(name);
    return it->second;
  };
  for (const auto& [name, t] : g.initializers) plan.constant_slots.push_back(slot_of(name));
  for (const ValueInfo& v : g.inputs)
    if (!g.is_initializer(v.name)) plan.feed_slots.push_back(slot_of(v.name));

  std::vector<std::string> missing;
  for (const Node& n : g.nodes) {
    PlanStep s;
    s.node = &n;
    s.opset = model.opset(n.domain);
    s.schema = OpRegistry::instance().find(n.domain, n.op_type, s.opset);
    DType key = kernel_key_dtype(g, n);
    s.kernel = KernelRegistry::instance().find(n.domain, n.op_type, s.opset, device, key);
    if (device != DeviceKind::kCpu) s.host_kernel = host_kernel_for(g, n, s.opset, key);
    if (!s.kernel && !s.host_kernel) {
      // Say when the op has kernels here, only not for this dtype (float16 before its kernels exist).
      bool other_dtype = KernelRegistry::instance().find(n.domain, n.op_type, s.opset, device) != nullptr;
      missing.push_back(other_dtype ? fmt::format("  {} ({} opset {}): none for {}", n.name, n.op_type, s.opset,
                                                  dtype_name(key))
                                    : fmt::format("  {} ({} opset {})", n.name, n.op_type, s.opset));
      continue;
    }
    for (const std::string& in : n.inputs) s.inputs.push_back(in.empty() ? -1 : slot_of(in));
    for (const std::string& out : n.outputs) s.outputs.push_back(out.empty() ? -1 : slot_of(out));
    plan.steps.push_back(std::move(s));
  }
  if (!missing.empty()) {
    std::string msg = fmt::format("{} node(s) have no kernel on this device ({}):", missing.size(),
                                  device == DeviceKind::kCpu ? "cpu" : "cuda");
    for (const auto& m : missing) msg += "\n" + m;
    return unsupported("{}", msg);
  }
  for (const ValueInfo& o : g.outputs) plan.output_slots.push_back(slot_of(o.name));
  plan_lifetimes(plan);
  return plan;
}

Status check_kernels(const Model& model, DeviceKind device) { return build_execution_plan(model, device).status(); }

}  // namespace ort_train
