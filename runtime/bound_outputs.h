// Graph outputs bound to memory the caller holds (the parameter store's
// gradient slots): every run writes each into its destination, or adds it
// there when RunOptions::accumulate_bound_outputs is set. The one place that
// decides whether a producer writes straight into the destination and how a
// value that was made elsewhere gets there.
#pragma once
#include <map>
#include <set>
#include <string>

#include "graph/shape_inference.h"
#include "runtime/device.h"
#include "runtime/execution_plan.h"
#include "runtime/kernel.h"
#include "runtime/vector_ops.h"

namespace ort_train {

class BoundOutputs {
 public:
  // Binds graph output `name` of `plan` to `dest` (on `device`). When the
  // output is an Identity of a value nothing else reads, the node making that
  // value is bound instead, so it writes into `dest` itself.
  // `state`: the output is the next value of `dest` (an initializer, as a
  // BatchNorm's running statistics), written every run and never added.
  Status bind(const ExecutionPlan& plan, DeviceKind device, const std::string& name, Tensor dest, bool state);
  bool empty() const { return sinks_.empty(); }
  // The destination slot `s` is bound to, or null.
  const Tensor* destination(int s) const;
  // Before a step's kernel runs: each of its bound outputs whose destination
  // has the answer's dtype and size is written in place, unless it is added.
  void preset(const PlanStep& step, const InferContext& answer, const RunOptions& options, KernelContext& kctx) const;
  // After: `value` of output `name` ends in `dest`, written there already, or
  // copied or added now. Returns `dest` viewed with the value's dims.
  Result<Tensor> deliver(int slot, const std::string& name, const Tensor& value, Device& device,
                         const RunOptions& options);
  // How many times a bound output had to be copied into its destination
  // because its producer wrote elsewhere (a view op).
  int64_t copies() const { return copies_; }

 private:
  // Whether slot `s`'s value is added into its destination this run.
  bool adds_into(int s, const RunOptions& options) const;
  std::map<int, Tensor> sinks_;  // slot -> destination
  std::set<int> states_;         // slots bound as the next value of their destination
  VectorOps* math_ = nullptr;
  int64_t copies_ = 0;
};

}  // namespace ort_train
