#include "runtime/plan_replay.h"

#include <algorithm>

#include "graph/passes/op_traits.h"

namespace ort_train {

namespace {
size_t round_to_64(size_t bytes) { return (bytes + 63) / 64 * 64; }
}  // namespace

void PlanReplay::begin(std::vector<std::pair<DType, Dims>> feed_shapes, const ExecutionPlan& plan,
                       const std::vector<bool>& changing) {
  replaying_ = rec_.recorded && rec_.feed_shapes == feed_shapes;
  recorded_blocks_.clear();
  live_blocks_.clear();
  if (replaying_) return;
  rec_ = Recording{};
  rec_.feed_shapes = std::move(feed_shapes);
  rec_.steps.resize(plan.steps.size());
  shape_fixed_.assign(plan.slot_names.size(), false);
  data_fixed_.assign(plan.slot_names.size(), false);
  for (int s : plan.constant_slots) {
    shape_fixed_[s] = true;
    data_fixed_[s] = !(static_cast<size_t>(s) < changing.size() && changing[s]);
  }
  for (int s : plan.feed_slots) shape_fixed_[s] = true;  // the key; fed data may change
  ++recordings_;
  arena_.reset();
}

const PlanReplay::StepRecord* PlanReplay::replayed(size_t i) const {
  return replaying_ && rec_.steps[i].replayable ? &rec_.steps[i] : nullptr;
}

void PlanReplay::record(size_t i, const PlanStep& step, const InferContext& answer, const StepPlacement& placement) {
  bool replayable = true;
  const uint64_t read = answer.values_read();
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    int s = step.inputs[k];
    if (s < 0) continue;
    bool data_read = k < 64 ? ((read >> k) & 1u) != 0 : read != 0;
    replayable = replayable && shape_fixed_[s] && (!data_read || data_fixed_[s]);
  }
  // Mark what this step's outputs leave fixed.
  const std::string& op = step.node->op_type;
  bool shape_only = step.node->domain.empty() && (op == "Shape" || op == "Size");
  bool random = is_random_op(*step.node);
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    int o = step.outputs[k];
    if (o < 0) continue;
    bool data = replayable && !random && (shape_only || !step.inputs.empty() || answer.output(k).value);
    for (int s : step.inputs) data = data && (shape_only || s < 0 || data_fixed_[s]);
    shape_fixed_[o] = replayable;
    data_fixed_[o] = data;
  }
  StepRecord& record = rec_.steps[i];
  record.replayable = replayable;
  if (!replayable) return;
  record.shapes = std::make_unique<InferContext>(*step.node, step.opset, std::vector<InferContext::Input>{});
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    const InferContext::Output& out = answer.output(k);
    record.shapes->set_output(k, out.dtype, out.shape);
    if (out.value) record.shapes->set_output_value(k, *out.value);
  }
  record.placement = placement;
}

void PlanReplay::finish(size_t steps) {
  if (!replaying_) {
    for (size_t a : live_blocks_) rec_.arena[a].freed = steps;  // outlive the run
    plan_arena(rec_, steps);
  }
  rec_.recorded = true;  // a failed run returns before this and records again next time
}

void PlanReplay::start_arena(Allocator& device_allocator, bool use_arena) {
  if (!use_arena) arena_.reset();
  if (!replaying_ || !use_arena || rec_.arena.empty()) return;
  // A block no earlier run's value still views (else a fresh one: the caller holds the old).
  if (!arena_ || arena_.use_count() > 1) {
    if (!arena_) device_allocator.release_cached();  // the recording run's blocks: the arena replaces them
    arena_ = device_allocator.allocate(rec_.arena_bytes);
    if (!arena_->data()) arena_.reset();  // out of memory for one block: outputs come from the allocator
  }
  handed_.assign(rec_.arena.size(), std::weak_ptr<Storage>());
}

int64_t PlanReplay::preset_outputs(size_t i, const InferContext& answer, KernelContext& kctx) {
  if (!replaying_ || !arena_) return 0;
  int64_t preset = 0;
  for (size_t a : rec_.arena_at_step[i]) {
    const ArenaSlot& slot = rec_.arena[a];
    const InferContext::Output& o = answer.output(slot.output);
    Dims dims = dims_from_shape(*o.shape);
    size_t nbytes = static_cast<size_t>(num_elements(dims)) * dtype_size(o.dtype);
    if (kctx.outputs()[slot.output].defined() || round_to_64(nbytes) != slot.bytes) continue;
    bool free = true;
    for (size_t c : slot.conflicts) free = free && handed_[c].expired();
    if (!free) continue;
    std::shared_ptr<Storage> view = Storage::view(arena_, slot.offset, nbytes);
    handed_[a] = view;
    kctx.set_output(slot.output, Tensor(o.dtype, std::move(dims), std::move(view)));
    ++preset;
  }
  return preset;
}

void PlanReplay::note_output(size_t i, size_t output, const Tensor& value, const Storage* fresh) {
  if (replaying_ || !fresh || value.storage().get() != fresh) return;
  ArenaSlot slot;
  slot.step = i;
  slot.output = output;
  slot.bytes = round_to_64(value.nbytes());
  rec_.arena.push_back(slot);
  recorded_blocks_.push_back(value.storage());
  live_blocks_.push_back(rec_.arena.size() - 1);
}

void PlanReplay::end_step(size_t i) {
  for (size_t j = 0; j < live_blocks_.size();) {
    size_t a = live_blocks_[j];
    if (recorded_blocks_[a].expired()) {
      rec_.arena[a].freed = i;
      live_blocks_[j] = live_blocks_.back();
      live_blocks_.pop_back();
    } else {
      ++j;
    }
  }
}

void PlanReplay::plan_arena(Recording& r, size_t steps) {
  // First fit in allocation order: each slot takes the lowest offset where no
  // slot alive when it is allocated (freed at its step or later) overlaps.
  for (size_t a = 0; a < r.arena.size(); ++a) {
    ArenaSlot& x = r.arena[a];
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t b = 0; b < a; ++b)
      if (r.arena[b].freed >= x.step) busy.emplace_back(r.arena[b].offset, r.arena[b].offset + r.arena[b].bytes);
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + x.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    x.offset = offset;
    r.arena_bytes = std::max(r.arena_bytes, offset + x.bytes);
    for (size_t b = 0; b < a; ++b)
      if (r.arena[b].offset < offset + x.bytes && offset < r.arena[b].offset + r.arena[b].bytes)
        x.conflicts.push_back(b);
  }
  r.arena_at_step.assign(steps, {});
  for (size_t a = 0; a < r.arena.size(); ++a) r.arena_at_step[r.arena[a].step].push_back(a);
}

}  // namespace ort_train
