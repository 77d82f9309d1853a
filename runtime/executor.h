// Runs a graph on a device from a static plan built once: nodes in topological
// order, each with its shape rule and kernel resolved, value slots numbered, and
// for every node the list of values whose last use it is. Those are released
// right after the node runs, so their buffers return to the caching allocator
// and the next node reuses them. The allocator's peak is the run's peak memory.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "runtime/vector_ops.h"

namespace ort_train {

struct PlanStep {
  const Node* node = nullptr;
  int64_t opset = 0;
  const OpSchema* schema = nullptr;
  const KernelDef* kernel = nullptr;       // on the executor's device (null: host only)
  const KernelDef* host_kernel = nullptr;  // CPU kernel for shape arithmetic on a GPU executor
  std::vector<int> inputs;   // slot per input, -1 when omitted
  std::vector<int> outputs;  // slot per output, -1 when omitted
  std::vector<int> release;  // slots to free after this step
  std::vector<int> ready;    // graph outputs this step makes final (RunOptions::on_output_ready)
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
// (known after binding symbolic dims), without running anything. A view op's
// output (Reshape, Flatten, Squeeze, Unsqueeze, Identity) shares its input's
// buffer, as the kernels make it, and keeps it alive to its own last use.
// `bound` names graph outputs written into memory the caller holds
// (Executor::bind_output: the parameter store's gradients), not counted.
struct MemoryEstimate {
  size_t initializer_bytes = 0;
  size_t peak_activation_bytes = 0;  // largest sum of live intermediates
  size_t peak_at = 0;                // the node after which that peak is reached
  bool complete = true;              // false when some intermediate's shape is unknown
};
MemoryEstimate estimate_memory(const Model& model, const std::set<std::string>& bound = {});
// Whether every node's inferred outputs, and weights plus peak activations,
// fit the device's memory budget (Device::memory_budget: its memory, or
// --max-memory), before anything runs. An error names the node, the shape and
// the bytes, or says by how much the plan is over. An incomplete estimate's
// total is not judged (its outputs are, again, as each node runs).
Status check_plan_fits(const Model& model, const MemoryEstimate& est, const Device& device);

// Sequences, optionals and maps are outside the runtime's tensor-only world:
// an error naming the first graph input or output of such a type.
Status check_tensor_io(const Graph& g);

// Whether every node of `model` has a kernel on `device` (or, on a GPU, can
// run as host-side shape arithmetic); the error lists all that do not.
Status check_kernels(const Model& model, DeviceKind device);

class Executor {
 public:
  // Resolves every node's shape rule and kernel for the device (the CPU when
  // `device` is null); lists all nodes that lack either before anything runs.
  // On a GPU the initializers are copied to the device once, or shared with
  // `constants_from` (an executor of a graph with the same initializers) so
  // both see the same parameters.
  static Result<std::unique_ptr<Executor>> create(const Model& model, std::shared_ptr<Device> device = nullptr,
                                                  const Executor* constants_from = nullptr);

  // Feeds are checked against the graph inputs' declared dtype and shape and
  // may live on the host or the device. Returns the graph outputs (or, if
  // `fetch` is non-empty, those values) where they were computed: on a GPU
  // executor most are device tensors (see to_host).
  Result<std::map<std::string, Tensor>> run(const std::map<std::string, Tensor>& feeds,
                                            const RunOptions& options = {},
                                            const std::vector<std::string>& fetch = {});

  const ExecutionPlan& plan() const { return plan_; }
  Allocator& allocator() { return *allocator_; }
  const Model& model() const { return model_; }
  Device& device() const { return *device_; }
  // The tensor an initializer is read from at run time: the model's own on
  // the CPU, its device copy on a GPU. Updating it in place updates the model
  // the next run sees.
  Result<Tensor> constant(const std::string& name) const;
  // Every run from now on writes output `name` into `dest` (same dtype and
  // dims), or adds it there when RunOptions::accumulate_bound_outputs is set:
  // the parameter store's gradient slots. When the output is an Identity of
  // a value nothing else reads, the node making that value writes into
  // `dest` itself, so a written gradient costs no copy.
  Status bind_output(const std::string& name, Tensor dest);
  // How many times a bound output had to be copied into its destination
  // because its producer wrote elsewhere (a view op); zero when every
  // gradient is written in place.
  int64_t bound_output_copies() const { return bound_output_copies_; }
  // The plan's step at which each graph output becomes final, by name.
  std::map<std::string, size_t> output_ready_steps() const;
  // The named initializers change from now on (parameters, running
  // statistics): shape rules and host-side arithmetic must not read their host
  // copies, which would go stale, and no replayed rule answer may depend on them.
  void forget_host_copies(const std::vector<std::string>& names);
  // Steps of the last run that replayed a recorded rule answer instead of
  // running the shape rule (see Replay), and runs so far that recorded one.
  int64_t replayed_steps() const { return replayed_steps_; }
  int64_t recordings() const { return recordings_; }
  // Whether replayed runs place outputs in the arena (Executor::ArenaSlot).
  // On by default on a GPU, where the arena gives every replayed output a
  // fixed address (what a CUDA-graph capture needs) and freed cache blocks go
  // back to the device. Off by default on the CPU: the caching allocator
  // already serves a steady state without system calls, and the recording
  // run's blocks, once freed, stay in the C library's heap, so an arena beside
  // them raised peak RSS (BERT-style bench model: 964 -> 1099 MiB).
  void use_replay_arena(bool on) { use_arena_ = on; }
  // Outputs of the last run placed in the replay arena, and its size in bytes.
  int64_t arena_outputs() const { return arena_outputs_; }
  size_t arena_bytes() const { return replay_.arena_bytes; }

 private:
  Executor(Model model, std::shared_ptr<Device> device)
      : model_(std::move(model)), device_(std::move(device)), allocator_(device_->make_allocator()) {}
  friend Status check_kernels(const Model& model, DeviceKind device);
  Status build_plan(DeviceKind device);
  Status bind_constants(const Executor* constants_from);
  Status check_feeds(const std::map<std::string, Tensor>& feeds) const;

  Model model_;  // owned copy (tensors are shared, not copied); plan steps point into it
  std::shared_ptr<Device> device_;
  std::shared_ptr<Allocator> allocator_;
  std::shared_ptr<Allocator> host_allocator_ = make_cpu_caching_allocator();  // shape arithmetic on a GPU executor
  ExecutionPlan plan_;
  // GPU executors: per slot, the device copy of each initializer, and a host
  // copy of the small and integer ones that shape rules read.
  std::vector<Tensor> device_constants_;
  std::vector<Tensor> host_constants_;
  // GPU executors: device copies of host values (Constants, shape arithmetic
  // results) kept while their source or bytes stay the same, so a steady
  // state uploads nothing.
  struct Upload {
    std::shared_ptr<Storage> source;  // the host tensor uploaded last
    std::vector<uint8_t> bytes;       // its bytes, for small recomputed values
    Tensor device;
  };
  std::vector<Upload> uploads_;
  // Slot -> destination of bound outputs (after moving a binding from an
  // Identity's output to the value it forwards).
  std::map<int, Tensor> sinks_;
  VectorOps* math_ = nullptr;
  int64_t bound_output_copies_ = 0;  // adds into bound outputs when accumulating

  // Plan replay. The first run with a new set of feed dtypes and dims records,
  // per step, the shape rule's answer (output dtypes, dims and rule-computed
  // values) and where the step ran; the next runs with the same feed shapes
  // replay it without running the rule. A step is replayable when its answer
  // cannot change while the feed shapes stay: every input's shape is itself
  // replayed (or a feed's, part of the key) and every input whose data the rule
  // read (InferContext::values_read) is fixed: an initializer nothing updates,
  // or a value computed only from fixed data or from shapes (Shape, Size).
  // Rules that read activations or fed data (a Reshape target computed from
  // an input's values, a Range bound from a reduction) run again every time.
  // A CUDA-graph capture would plug in at the same point: a fully replayable
  // plan with the same feed shapes launches the same kernels.
  struct StepRecord {
    std::unique_ptr<InferContext> shapes;  // the recorded answer (no inputs: kernels read only outputs)
    bool replayable = false;
    bool run_on_host = false, computed_by_rule = false;  // placement on a GPU executor
    std::vector<int> host_fetched;  // GPU: slots whose host copy the rule needed
  };
  // The replay arena: the outputs the recording run took fresh from the
  // allocator get fixed offsets in one block, packed first-fit by the
  // lifetimes the recording observed (allocated at `step`, gone after the
  // releases of `freed`). A replayed step presets those outputs as views of
  // the block, after checking that every earlier output sharing its bytes is
  // gone; one still alive (a caller holding a value longer) makes that output
  // come from the allocator instead, so a wrong guess costs memory, never data.
  struct ArenaSlot {
    size_t step = 0, output = 0;
    size_t bytes = 0, offset = 0;
    size_t freed = 0;
    std::vector<size_t> conflicts;  // earlier slots sharing bytes
  };
  struct Replay {
    bool recorded = false;
    std::vector<std::pair<DType, Dims>> feed_shapes;  // the key, in feed_slots order
    std::vector<StepRecord> steps;
    std::vector<ArenaSlot> arena;
    std::vector<std::vector<size_t>> arena_at_step;  // arena slots by step
    size_t arena_bytes = 0;
  };
  static void plan_arena(Replay& r, size_t steps);
  Replay replay_;
  bool use_arena_ = false;                       // set in create: on for a GPU
  std::shared_ptr<Storage> arena_;               // the block replayed outputs view
  std::vector<std::weak_ptr<Storage>> handed_;   // per arena slot: the view handed out this run
  int64_t arena_outputs_ = 0;
  std::vector<bool> changing_;  // per slot: initializers the caller updates (forget_host_copies)
  int64_t replayed_steps_ = 0;
  int64_t recordings_ = 0;
};

}  // namespace ort_train
