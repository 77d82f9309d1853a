// Plan-time placement for a GPU executor: where each step of the plan runs,
// and the copies between host and device that come before it, decided once
// from the graph (inferred shapes and dtypes, the ops' declared traits, which
// initializers keep a host copy) before anything runs. Executor::run carries
// the decisions out and makes none of its own.
//
// Why a GPU plan runs anything on the host: shape arithmetic (Shape, Gather
// of a dim, Concat of sizes) is a few integers that later shape rules read
// as data. Computing it on the device would mean a device-to-host copy, and a
// wait, for every Reshape. So a step runs on the host when its outputs are
// small integers and every input is readable there; a step whose op computes
// its value from shapes alone (Shape, Size, Constant) is its rule's answer.
//
// Data-dependent shapes (NonZero's count, a Reshape target computed on the
// device, Range of a reduction) are the plan's re-plan points: the plan
// copies the data the step's rule reads (its kRuleReadsInput traits) to the
// host right before the step, and the rule runs again on it every run
// (PlanReplay never replays a rule that read changing data), so every later
// step's shapes follow from it.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "runtime/execution_plan.h"

namespace ort_train {

// A host step's outputs may hold at most this many elements (all of them
// together); larger integer results stay on the device.
inline constexpr int64_t kMaxHostStepElements = 4096;

// Sets every step's place and copies. `host_copies`, per slot: the
// initializers whose host copy stays valid (small or integer ones nothing
// updates). Feeds count as device values: the trainer stages them there.
// Run again when that set changes (Executor::forget_host_copies).
void place_steps(ExecutionPlan& plan, const Graph& g, const std::vector<bool>& host_copies);

}  // namespace ort_train
