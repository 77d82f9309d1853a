// Plan replay: what the first run with a set of feed shapes decided for each
// step, kept so the next runs with the same feed shapes skip the deciding.
//
// The first run with a new set of feed dtypes and dims records, per step, the
// shape rule's answer (output dtypes, dims and rule-computed values); the
// next runs with the same feed shapes replay it without running the rule. A
// step is replayable when its answer cannot change while the feed shapes
// stay: every input's shape is itself replayed (or a feed's, part of the key)
// and every input whose data the rule read (InferContext::values_read) is
// fixed: an initializer nothing updates, or a value computed only from fixed
// data or from shapes (Shape, Size, Constant). Rules
// that read activations or fed data (a Reshape target computed from an
// input's values, a Range bound from a reduction) run again every time.
//
// The replay arena: the outputs the recording run took fresh from the device
// allocator get fixed offsets in one block, packed first-fit by the lifetimes
// the recording observed (allocated at `step`, gone after the releases of
// `freed`). A replayed step presets those outputs as views of the block,
// after checking that no view handed out this run over the same bytes is
// alive; one still alive (a caller holding a value longer) makes that output
// come from the allocator instead, so a wrong guess costs memory, never data. The arena
// gives every replayed output a fixed address, which is what a CUDA-graph
// capture needs: a fully replayable plan with the same feed shapes launches
// the same kernels on the same addresses.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/shape_inference.h"
#include "runtime/allocator.h"
#include "runtime/execution_plan.h"
#include "runtime/kernel.h"

namespace ort_train {

class PlanReplay {
 public:
  struct StepRecord {
    std::unique_ptr<InferContext> shapes;  // the recorded answer (no inputs: kernels read only outputs)
    bool replayable = false;
  };

  // Starts a run with these feed dtypes and dims (in the plan's feed_slots
  // order). It replays when they are the recorded ones; otherwise the old
  // recording is dropped and this run records. `changing` marks, per slot,
  // the initializers the caller updates (they are never fixed data).
  void begin(std::vector<std::pair<DType, Dims>> feed_shapes, const ExecutionPlan& plan,
             const std::vector<bool>& changing);
  bool replaying() const { return replaying_; }
  // Step i's recorded answer when this run replays it; null when its rule runs.
  const StepRecord* replayed(size_t i) const;
  // Recording: keeps step i's answer when later runs may replay it.
  void record(size_t i, const PlanStep& step, const InferContext& answer);
  // A run that reached its last step: the recording is complete.
  void finish(size_t steps);
  // Drops the recording: a rule may have read initializers that now change.
  void forget() { rec_ = Recording{}; }
  int64_t recordings() const { return recordings_; }

  // The arena, after begin: a replaying run on a device that uses one takes
  // (or keeps) its block here.
  void start_arena(Allocator& device_allocator, bool use_arena);
  // Replaying: presets step i's outputs at their recorded arena offsets when
  // nothing that shares the bytes is alive; returns how many.
  int64_t preset_outputs(size_t i, const InferContext& answer, KernelContext& kctx);
  // Recording: output `output` of step i, `value` (the run's value slot
  // `value_slot`), came fresh from the device allocator as `fresh`.
  void note_output(size_t i, size_t output, int value_slot, const Tensor& value, const Storage* fresh);
  // Recording: after step i's releases (`released`, value slots), the arena
  // slots whose blocks are gone end their lifetime.
  void end_step(size_t i, const std::vector<int>& released);
  size_t arena_bytes() const { return rec_.arena_bytes; }

 private:
  static constexpr size_t kAlive = SIZE_MAX;  // an arena slot's block not seen gone yet
  struct ArenaSlot {
    size_t step = 0, output = 0;
    size_t bytes = 0, offset = 0;
    size_t freed = kAlive;
  };
  // A view of the arena handed out this run: where its bytes end.
  struct Handed {
    size_t end = 0;
    std::weak_ptr<Storage> view;
  };
  struct Recording {
    bool recorded = false;
    std::vector<std::pair<DType, Dims>> feed_shapes;  // the key, in feed_slots order
    std::vector<StepRecord> steps;
    std::vector<ArenaSlot> arena;
    std::vector<std::vector<size_t>> arena_at_step;  // arena slots by step
    size_t arena_bytes = 0;
  };
  static void plan_arena(Recording& r, size_t steps);
  bool bytes_free(size_t lo, size_t hi);

  Recording rec_;
  bool replaying_ = false;
  int64_t recordings_ = 0;
  // While recording, per slot: whether its shape, and its data, stay the same
  // as long as the feed shapes do.
  std::vector<bool> shape_fixed_, data_fixed_;
  // While recording, per arena slot: its block; by value slot, the arena
  // slot of a value not released yet (its own, or the block an in-place
  // output wrote into); and the arena slots whose known holders are gone
  // while the block lives on (a view another value holds).
  struct Pending {
    size_t next = 0, wait = 1, slot = 0;  // the step to look again at, the wait after that; the arena slot
    bool operator>(const Pending& o) const { return next > o.next; }
  };
  std::vector<std::weak_ptr<Storage>> recorded_blocks_;
  std::vector<const Storage*> recorded_ptrs_;  // the same blocks' addresses, for block_of_storage_
  std::vector<int> holders_;                   // per arena slot: values not released yet that hold it
  std::unordered_map<int, size_t> arena_of_slot_;                // value slot -> the arena slot it holds
  std::unordered_map<const Storage*, size_t> block_of_storage_;  // live recorded blocks
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> later_;
  std::shared_ptr<Storage> arena_;      // the block replayed outputs view
  std::map<size_t, Handed> handed_;     // by offset: the views handed out this run (never overlapping)
};

}  // namespace ort_train
