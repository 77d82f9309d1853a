#include "runtime/bound_outputs.h"

#include <algorithm>

namespace ort_train {

// 16-bit float destinations are always written: their sum over micro-batches
// is kept in float32 by the caller (the trainer's master gradients). A state
// is the next value of its destination, never a sum.
bool BoundOutputs::adds_into(int s, const RunOptions& options) const {
  const Tensor* dest = destination(s);
  return options.accumulate_bound_outputs && dest && !dtype_is_half(dest->dtype()) && !states_.count(s);
}

Status BoundOutputs::bind(const ExecutionPlan& plan, DeviceKind device, const std::string& name, Tensor dest,
                          bool state) {
  auto it = plan.slots.find(name);
  if (it == plan.slots.end() ||
      std::find(plan.output_slots.begin(), plan.output_slots.end(), it->second) == plan.output_slots.end())
    return invalid_argument("'{}' is not an output of the model", name);
  if (dest.device() != device) return invalid_argument("output '{}' is bound to a tensor on another device", name);
  int slot = it->second;
  // Follow Identity back to the value it forwards while nothing else reads
  // that value and it is not pinned (a feed, an initializer, an output): its
  // producer then writes into the destination and the Identity aliases it.
  std::vector<int> readers(plan.slot_names.size(), 0), producer(plan.slot_names.size(), -1);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    for (int s : plan.steps[i].inputs)
      if (s >= 0) ++readers[s];
    for (int s : plan.steps[i].outputs)
      if (s >= 0) producer[s] = static_cast<int>(i);
  }
  std::vector<bool> pinned = plan.pinned_slots();
  while (producer[slot] >= 0) {
    const PlanStep& step = plan.steps[producer[slot]];
    if (step.node->op_type != "Identity" || !step.node->domain.empty() || step.inputs.size() != 1) break;
    int src = step.inputs[0];
    if (src < 0 || pinned[src] || readers[src] != 1 || producer[src] < 0 || sinks_.count(src)) break;
    slot = src;
  }
  sinks_[slot] = std::move(dest);
  if (state) states_.insert(slot);
  return Status::Ok();
}

const Tensor* BoundOutputs::destination(int s) const {
  auto it = s >= 0 ? sinks_.find(s) : sinks_.end();
  return it == sinks_.end() ? nullptr : &it->second;
}

void BoundOutputs::preset(const PlanStep& step, const InferContext& answer, const RunOptions& options,
                          KernelContext& kctx) const {
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const Tensor* dest = destination(step.outputs[i]);
    if (!dest || adds_into(step.outputs[i], options) || dest->dtype() != answer.output(i).dtype) continue;
    Dims dims = dims_from_shape(*answer.output(i).shape);
    if (dest->numel() == num_elements(dims)) kctx.set_output(i, dest->reshaped(dims));  // written in place
  }
}

Result<Tensor> BoundOutputs::deliver(int slot, const std::string& name, const Tensor& value, Device& device,
                                     const RunOptions& options) {
  const Tensor& dest = sinks_.at(slot);
  if (value.dtype() != dest.dtype() || value.numel() != dest.numel())
    return invalid_argument("output '{}' is {} {}, its bound destination {} {}", name, dtype_name(value.dtype()),
                            dims_to_string(value.dims()), dtype_name(dest.dtype()), dims_to_string(dest.dims()));
  if (adds_into(slot, options)) {
    if (!math_) {
      ASSIGN_OR_RETURN(math_, vector_ops(device.kind()));
    }
    Tensor on_device = value.device() == device.kind() ? value : Tensor();
    if (!on_device.defined()) {
      ASSIGN_OR_RETURN(on_device, to_device(device, value));
    }
    RETURN_IF_ERROR(math_->add_into(dest, on_device));
  } else if (value.raw() != dest.raw()) {
    RETURN_IF_ERROR(device.copy(value, dest));
    ++copies_;
  }
  return dest.reshaped(value.dims());
}

}  // namespace ort_train
