// The values of one Executor::run, by plan slot: each where it was made and,
// on a GPU executor, a host copy that shape rules and host-side shape
// arithmetic read (a host value, or a small integer one fetched back).
#pragma once
#include <algorithm>
#include <vector>

#include "graph/shape_inference.h"
#include "runtime/device.h"
#include "runtime/execution_plan.h"

namespace ort_train {

struct RunValues {
  RunValues(size_t slots_count, bool cpu)
      : slots(slots_count), host(cpu ? 0 : slots_count), shapes(slots_count), keep(slots_count, false), on_cpu(cpu) {}

  // Ready for the next run: no values, nothing kept. Each slot keeps its last
  // shape's storage, which the next bind of the slot overwrites in place (a
  // replayed step then allocates nothing for its outputs' shapes).
  void clear() {
    std::fill(slots.begin(), slots.end(), Tensor());
    std::fill(host.begin(), host.end(), Tensor());
    std::fill(keep.begin(), keep.end(), false);
  }

  std::vector<Tensor> slots;
  std::vector<Tensor> host;     // GPU executors only
  std::vector<OptShape> shapes;
  std::vector<bool> keep;       // fetched by the caller: never released
  bool on_cpu;

  void bind(int s, Tensor t) {
    set_shape(shapes[s], t.dims());
    if (!on_cpu && t.device() == DeviceKind::kCpu) host[s] = t;
    slots[s] = std::move(t);
  }
  // GPU executors: gives slot `s` its host copy, if it has none yet.
  Status fetch_host(int s, Device& device) {
    if (host[s].defined()) return Status::Ok();
    ASSIGN_OR_RETURN(host[s], to_host(device, slots[s]));
    return Status::Ok();
  }
  // A released slot's shape stays (nothing reads it before the slot is bound again).
  void release(int s) {
    if (keep[s]) return;
    slots[s] = Tensor();
    if (!on_cpu) host[s] = Tensor();
  }
  // What a step's shape rule sees of its inputs: dtypes, shapes and the data
  // of the values the host holds.
  std::vector<InferContext::Input> infer_inputs(const PlanStep& step) const {
    std::vector<InferContext::Input> in;
    for (int s : step.inputs) {
      if (s < 0) in.emplace_back();
      else in.push_back({slots[s].dtype(), &shapes[s], on_cpu ? &slots[s] : (host[s].defined() ? &host[s] : nullptr)});
    }
    return in;
  }

 private:
  static void set_shape(OptShape& shape, const Dims& dims) {
    if (!shape) shape.emplace();
    shape->resize(dims.size());
    for (size_t k = 0; k < dims.size(); ++k) {
      (*shape)[k].value = dims[k];
      (*shape)[k].symbol.clear();
    }
  }
};

}  // namespace ort_train
