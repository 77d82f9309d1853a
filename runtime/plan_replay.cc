#include "runtime/plan_replay.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <queue>

#include "graph/op_schema.h"
#include "graph/passes/op_traits.h"

namespace ort_train {

namespace {
size_t round_to_64(size_t bytes) { return (bytes + 63) / 64 * 64; }
}  // namespace

void PlanReplay::begin(std::vector<std::pair<DType, Dims>> feed_shapes, const ExecutionPlan& plan,
                       const std::vector<bool>& changing) {
  replaying_ = rec_.recorded && rec_.feed_shapes == feed_shapes;
  recorded_blocks_.clear();
  recorded_ptrs_.clear();
  holders_.clear();
  later_ = {};
  arena_of_slot_.clear();
  block_of_storage_.clear();
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

void PlanReplay::record(size_t i, const PlanStep& step, const InferContext& answer) {
  bool replayable = true;
  const uint64_t read = answer.values_read();
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    int s = step.inputs[k];
    if (s < 0) continue;
    bool data_read = k < 64 ? ((read >> k) & 1u) != 0 : read != 0;
    replayable = replayable && shape_fixed_[s] && (!data_read || data_fixed_[s]);
  }
  // Mark what this step's outputs leave fixed.
  // Shape, Size, Constant: their values follow from shapes and attributes alone.
  const bool shape_only = (step.schema->traits & kValueFromRule) != 0;
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
}

void PlanReplay::finish(size_t steps) {
  if (!replaying_) {
    for (ArenaSlot& a : rec_.arena)
      if (a.freed == kAlive) a.freed = steps;  // outlive the run
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
  handed_.clear();
}

// Whether no view handed out this run over [lo, hi) is still alive; expired
// ones are dropped on the way. The live views never overlap (none is handed
// over another), so the ones that could overlap are a run just below `hi`.
bool PlanReplay::bytes_free(size_t lo, size_t hi) {
  auto it = handed_.lower_bound(hi);
  while (it != handed_.begin()) {
    --it;
    if (it->second.end <= lo) return true;
    if (!it->second.view.expired()) return false;
    it = handed_.erase(it);
  }
  return true;
}

int64_t PlanReplay::preset_outputs(size_t i, const InferContext& answer, KernelContext& kctx) {
  if (!replaying_ || !arena_) return 0;
  int64_t preset = 0;
  for (size_t a : rec_.arena_at_step[i]) {
    const ArenaSlot& slot = rec_.arena[a];
    const InferContext::Output& o = answer.output(slot.output);
    Dims dims = dims_from_shape(*o.shape);
    size_t nbytes = static_cast<size_t>(num_elements(dims)) * dtype_size(o.dtype);
    // An empty output gains nothing from the arena, and its entry in handed_
    // would take the place of a live view at the same offset.
    if (slot.bytes == 0 || kctx.outputs()[slot.output].defined() || round_to_64(nbytes) != slot.bytes) continue;
    if (!bytes_free(slot.offset, slot.offset + slot.bytes)) continue;
    std::shared_ptr<Storage> view = Storage::view(arena_, slot.offset, nbytes);
    handed_[slot.offset] = Handed{slot.offset + slot.bytes, view};
    kctx.set_output(slot.output, Tensor(o.dtype, std::move(dims), std::move(view)));
    ++preset;
  }
  return preset;
}

void PlanReplay::note_output(size_t i, size_t output, int value_slot, const Tensor& value, const Storage* fresh) {
  if (replaying_ || !value.defined() || !value.storage()) return;
  if (!fresh || value.storage().get() != fresh) {
    // Not fresh: an output written into an input's block (an in-place
    // kernel) holds that block on; its release is the next time to look.
    auto it = block_of_storage_.find(value.storage().get());
    if (it != block_of_storage_.end() && recorded_blocks_[it->second].lock() == value.storage()) {
      arena_of_slot_[value_slot] = it->second;
      ++holders_[it->second];
    }
    return;
  }
  ArenaSlot slot;
  slot.step = i;
  slot.output = output;
  slot.bytes = round_to_64(value.nbytes());
  rec_.arena.push_back(slot);
  recorded_blocks_.push_back(value.storage());
  recorded_ptrs_.push_back(value.storage().get());
  holders_.push_back(1);
  block_of_storage_[value.storage().get()] = rec_.arena.size() - 1;
  arena_of_slot_[value_slot] = rec_.arena.size() - 1;
}

void PlanReplay::end_step(size_t i, const std::vector<int>& released) {
  if (replaying_) return;
  // A block can go only when a value holding it is released: the values
  // released here are where to look, so a step costs what it releases, not
  // what is alive. A block still held after its known holders went (a view
  // another value keeps) is looked at again after 1, 2, 4, ... steps: its
  // end is then seen late, which costs arena bytes, never a wrong overlap.
  auto gone = [&](size_t a) {
    if (rec_.arena[a].freed != kAlive) return true;
    if (!recorded_blocks_[a].expired()) return false;
    rec_.arena[a].freed = i;
    block_of_storage_.erase(recorded_ptrs_[a]);
    return true;
  };
  for (int s : released) {
    auto it = arena_of_slot_.find(s);
    if (it == arena_of_slot_.end()) continue;
    size_t a = it->second;
    arena_of_slot_.erase(it);
    if (--holders_[a] == 0 && !gone(a)) later_.push(Pending{i + 1, 1, a});
  }
  while (!later_.empty() && later_.top().next <= i) {
    Pending p = later_.top();
    later_.pop();
    if (gone(p.slot)) continue;
    p.wait *= 2;
    p.next = i + p.wait;
    later_.push(p);
  }
}

void PlanReplay::plan_arena(Recording& r, size_t steps) {
  // First fit in allocation order: each slot takes the lowest offset where no
  // slot still alive when it is allocated (freed at its step or later)
  // overlaps. Slots come in step order, so one freed before a slot's step is
  // free for every later one: its bytes join the free gaps below `top`, the
  // end of the live slots, for good. Near-linear: a 100k-node chain planned
  // in quadratic time for minutes.
  std::map<size_t, size_t> gaps;  // offset -> size of each free range below top
  size_t top = 0;
  using Live = std::pair<size_t, size_t>;  // (freed, slot)
  std::priority_queue<Live, std::vector<Live>, std::greater<Live>> live;
  auto release = [&](const ArenaSlot& x) {
    size_t lo = x.offset, hi = x.offset + x.bytes;
    auto next = gaps.lower_bound(lo);
    if (next != gaps.end() && next->first == hi) {
      hi += next->second;
      next = gaps.erase(next);
    }
    if (next != gaps.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == lo) {
        lo = prev->first;
        gaps.erase(prev);
      }
    }
    if (hi == top) top = lo;  // the free range reaches the top: the top comes down
    else gaps[lo] = hi - lo;
  };
  for (size_t a = 0; a < r.arena.size(); ++a) {
    ArenaSlot& x = r.arena[a];
    while (!live.empty() && live.top().first < x.step) {
      release(r.arena[live.top().second]);
      live.pop();
    }
    auto fit = std::find_if(gaps.begin(), gaps.end(), [&](const auto& g) { return g.second >= x.bytes; });
    if (fit != gaps.end()) {
      x.offset = fit->first;
      if (fit->second > x.bytes) gaps[fit->first + x.bytes] = fit->second - x.bytes;
      gaps.erase(fit);
    } else {
      x.offset = top;
      top += x.bytes;
    }
    r.arena_bytes = std::max(r.arena_bytes, x.offset + x.bytes);
    live.emplace(x.freed, a);
  }
  r.arena_at_step.assign(steps, {});
  for (size_t a = 0; a < r.arena.size(); ++a) r.arena_at_step[r.arena[a].step].push_back(a);
}

}  // namespace ort_train
