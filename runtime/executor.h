// Runs a graph on a device from a static plan built once (execution_plan.h):
// nodes in topological order, each with its shape rule and kernel resolved,
// value slots numbered, and for every node the list of values whose last use
// it is. Those are released right after the node runs, so their buffers return
// to the caching allocator and the next node reuses them. The allocator's peak
// is the run's peak memory. A run goes step by step: the copies the plan put
// before the step (a GPU plan's, placed by plan_placement.h), the step's
// shapes (its rule, or the answer PlanReplay recorded), its kernel where the
// plan placed it, then its bound outputs (BoundOutputs) and releases.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/allocator.h"
#include "runtime/bound_outputs.h"
#include "runtime/device.h"
#include "runtime/execution_plan.h"
#include "runtime/kernel.h"
#include "runtime/memory_estimate.h"
#include "runtime/plan_replay.h"
#include "runtime/run_values.h"

namespace ort_train {

// Whether `feeds` are what `g` takes: every name one of its inputs, every
// input it needs there, each with the input's dtype and shape (symbolic dims
// bound consistently). Executor::run checks this first; callers check data
// before a run with it (the held-out data, before training).
Status check_graph_feeds(const Graph& g, const std::map<std::string, Tensor>& feeds);

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
  // Every run from now on writes output `name`, the next value of an
  // initializer (a BatchNorm's running statistics), into `dest`, that
  // initializer's own tensor (constant()): in place, never added. Its
  // producer reads the old value and writes the new one element by element.
  Status bind_state_output(const std::string& name, Tensor dest);
  // How many times a bound output had to be copied into its destination
  // because its producer wrote elsewhere (a view op); zero when every
  // gradient is written in place.
  int64_t bound_output_copies() const { return bound_.copies(); }
  // The plan's step at which each graph output becomes final, by name.
  std::map<std::string, size_t> output_ready_steps() const;
  // The named initializers change from now on (parameters, running
  // statistics): shape rules and host-side arithmetic must not read their host
  // copies, which would go stale, and no replayed rule answer may depend on them.
  void forget_host_copies(const std::vector<std::string>& names);
  // Steps of the last run that replayed a recorded rule answer instead of
  // running the shape rule (see PlanReplay), and runs so far that recorded one.
  int64_t replayed_steps() const { return replayed_steps_; }
  int64_t recordings() const { return replay_.recordings(); }
  // Whether replayed runs place outputs in the arena (PlanReplay).
  // On by default on a GPU, where the arena gives every replayed output a
  // fixed address (what a CUDA-graph capture needs) and freed cache blocks go
  // back to the device. Off by default on the CPU: the caching allocator
  // already serves a steady state without system calls, and the recording
  // run's blocks, once freed, stay in the C library's heap, so an arena beside
  // them raised peak RSS (BERT-style bench model: 964 -> 1099 MiB).
  void use_replay_arena(bool on) { use_arena_ = on; }
  // Outputs of the last run placed in the replay arena, and its size in bytes.
  int64_t arena_outputs() const { return arena_outputs_; }
  size_t arena_bytes() const { return replay_.arena_bytes(); }

 private:
  Executor(Model model, std::shared_ptr<Device> device)
      : model_(std::move(model)), device_(std::move(device)), allocator_(device_->make_allocator()) {}
  Status bind_constants(const Executor* constants_from);
  Status check_feeds(const std::map<std::string, Tensor>& feeds) const;
  Status bind_feeds(const std::map<std::string, Tensor>& feeds, RunValues& values);
  // GPU executors: places the plan's steps for the host copies held now.
  void place();
  // One step of a run, and its parts in the order they happen.
  Status run_step(size_t i, RunValues& values, const RunOptions& options);
  Result<const InferContext*> step_shapes(size_t i, RunValues& values, std::optional<InferContext>& answer);
  Status bind_rule_values(const PlanStep& step, const InferContext& answer, RunValues& values);
  Status run_kernel(size_t i, const InferContext& answer, RunValues& values, const RunOptions& options);
  Result<std::vector<const Tensor*>> kernel_inputs(const PlanStep& step, RunValues& values,
                                                   std::vector<Tensor>& uploaded);
  void preset_outputs(size_t i, const KernelDef& kernel, const InferContext& answer, RunValues& values,
                      const RunOptions& options, KernelContext& kctx);
  Status deliver_bound_outputs(const PlanStep& step, RunValues& values, const RunOptions& options);
  Result<Tensor> upload(int s, const Tensor& t);

  Model model_;  // owned copy (tensors are shared, not copied); plan steps point into it
  std::shared_ptr<Device> device_;
  std::shared_ptr<Device> host_device_;  // device_ on the CPU; the CPU's for nodes a GPU executor runs on the host
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
  BoundOutputs bound_;
  PlanReplay replay_;
  // The values of the run under way; kept between runs (empty) so a slot's
  // shape storage is reused rather than allocated again every run.
  RunValues values_{0, true};
  bool use_arena_ = false;      // set in create: on for a GPU
  int64_t arena_outputs_ = 0;
  std::vector<bool> changing_;  // per slot: initializers the caller updates (forget_host_copies)
  int64_t replayed_steps_ = 0;
};

}  // namespace ort_train
