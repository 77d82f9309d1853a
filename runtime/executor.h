// Runs a graph on a device from a static plan built once: nodes in topological
// order, each with its shape rule and kernel resolved, value slots numbered, and
// for every node the list of values whose last use it is. Those are released
// right after the node runs, so their buffers return to the caching allocator
// and the next node reuses them. The allocator's peak is the run's peak memory.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/allocator.h"
#include "runtime/kernel.h"

namespace ort_train {

struct PlanStep {
  const Node* node = nullptr;
  int64_t opset = 0;
  const OpSchema* schema = nullptr;
  const KernelDef* kernel = nullptr;
  std::vector<int> inputs;   // slot per input, -1 when omitted
  std::vector<int> outputs;  // slot per output, -1 when omitted
  std::vector<int> release;  // slots to free after this step
};

struct ExecutionPlan {
  std::vector<PlanStep> steps;
  std::map<std::string, int> slots;  // value name -> slot
  std::vector<std::string> slot_names;
  std::vector<int> constant_slots;   // initializers, bound once
  std::vector<int> feed_slots;       // graph inputs fed per run
  std::vector<int> output_slots;     // graph outputs
};

// Shape of the memory the plan needs, computed from the graph's inferred shapes
// (known after binding symbolic dims), without running anything.
struct MemoryEstimate {
  size_t initializer_bytes = 0;
  size_t peak_activation_bytes = 0;  // largest sum of live intermediates
  bool complete = true;              // false when some intermediate's shape is unknown
};
MemoryEstimate estimate_memory(const Model& model);

// Sequences, optionals and maps are outside the runtime's tensor-only world:
// an error naming the first graph input or output of such a type.
Status check_tensor_io(const Graph& g);

class Executor {
 public:
  // Resolves every node's shape rule and kernel for the device; lists all
  // nodes that lack either before anything runs.
  static Result<std::unique_ptr<Executor>> create(const Model& model, DeviceKind device = DeviceKind::kCpu);

  // Feeds are checked against the graph inputs' declared dtype and shape.
  // Returns the graph outputs (or, if `fetch` is non-empty, those values).
  Result<std::map<std::string, Tensor>> run(const std::map<std::string, Tensor>& feeds,
                                            const RunOptions& options = {},
                                            const std::vector<std::string>& fetch = {});

  const ExecutionPlan& plan() const { return plan_; }
  Allocator& allocator() { return *allocator_; }
  const Model& model() const { return model_; }

 private:
  Executor(Model model, std::shared_ptr<Allocator> allocator)
      : model_(std::move(model)), allocator_(std::move(allocator)) {}
  Status build_plan(DeviceKind device);
  Status check_feeds(const std::map<std::string, Tensor>& feeds) const;

  Model model_;  // owned copy (tensors are shared, not copied); plan steps point into it
  std::shared_ptr<Allocator> allocator_;
  ExecutionPlan plan_;
};

}  // namespace ort_train
