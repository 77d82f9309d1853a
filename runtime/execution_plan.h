// The static plan an Executor runs: nodes in topological order, each with
// its shape rule and kernel resolved, value slots numbered, and for every node
// the values whose last use it is. Built once per model and device, before
// anything runs; it reads the graph, never tensors.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/kernel.h"

namespace ort_train {

// Where a step runs. A CPU plan runs every step on its device (kDevice); a
// GPU plan's places are set by place_steps (plan_placement.h).
enum class StepPlace : uint8_t {
  kDevice,  // the device kernel, on device values
  kHost,    // the CPU kernel, on host copies: small integer shape arithmetic
  kRule,    // no kernel: the shape rule computes every output (Shape, Size, Constant)
};

struct PlanStep {
  const Node* node = nullptr;
  int64_t opset = 0;
  StepPlace place = StepPlace::kDevice;  // (here, not last: a replayed step reads only its first bytes)
  const OpSchema* schema = nullptr;
  const KernelDef* kernel = nullptr;       // on the executor's device (null: host only)
  const KernelDef* host_kernel = nullptr;  // CPU kernel for shape arithmetic on a GPU executor
  std::vector<int> inputs;   // slot per input, -1 when omitted
  std::vector<int> outputs;  // slot per output, -1 when omitted
  std::vector<int> release;  // slots to free after this step
  std::vector<int> ready;    // graph outputs this step makes final (RunOptions::on_output_ready)
  std::vector<int> outputs_done;  // graph outputs read or made last here (RunOptions::release_outputs)
};

// The copies that run before a step of a GPU plan: device values copied to
// the host (a host step's inputs, the data its rule reads), and host values
// the device kernel reads, copied to the device (once per slot while their
// bytes stay the same).
struct StepCopies {
  std::vector<int> fetch;
  std::vector<int> upload;
};

struct ExecutionPlan {
  std::vector<PlanStep> steps;
  std::map<std::string, int> slots;  // value name -> slot
  std::vector<std::string> slot_names;
  std::vector<int> constant_slots;   // initializers, bound once
  std::vector<int> feed_slots;       // graph inputs fed per run
  std::vector<int> output_slots;     // graph outputs
  // GPU plans: per step, the copies before it (place_steps). Empty on a CPU
  // plan, whose steps copy nothing; kept beside the steps rather than in
  // them, so a replayed CPU step touches no more memory than before.
  std::vector<StepCopies> copies;

  // Slots whose values the caller supplies or reads: never released, never
  // written in place of another value.
  std::vector<bool> pinned_slots() const;
};

// The plan of `model` on `device`. Its steps point into `model`, which must
// outlive it. Lists every node without a kernel (or, on a GPU, a host kernel
// for integer shape arithmetic) in one error.
Result<ExecutionPlan> build_execution_plan(const Model& model, DeviceKind device);

// Whether every node of `model` has a kernel on `device` (or, on a GPU, can
// run as host-side shape arithmetic); the error lists all that do not.
Status check_kernels(const Model& model, DeviceKind device);

// Sequences, optionals and maps are outside the runtime's tensor-only world:
// an error naming the first graph input or output of such a type.
Status check_tensor_io(const Graph& g);

// Integer and bool values are the ones host-side shape arithmetic handles.
inline bool is_integer_or_bool(DType t) { return dtype_is_integer(t) || t == DType::kBool; }

}  // namespace ort_train
