// What memory a graph needs, from its inferred shapes and the liveness of
// its values, before anything runs; and whether that fits the device.
#pragma once
#include <set>
#include <string>

#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "runtime/device.h"

namespace ort_train {

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
  size_t sized = 0, unsized = 0;     // intermediates whose size is known, and not
};
MemoryEstimate estimate_memory(const Model& model, const std::set<std::string>& bound = {});

// Whether every node's inferred outputs, and weights plus peak activations,
// fit the device's memory budget (Device::memory_budget: its memory, or
// --max-memory), before anything runs. An error names the node, the shape and
// the bytes, or says by how much the plan is over. An incomplete estimate's
// total is not judged (its outputs are, again, as each node runs).
Status check_plan_fits(const Model& model, const MemoryEstimate& est, const Device& device);

// Each output's bytes, computed in 64 bits with overflow checks, against a
// memory budget (0: none). Shapes come from files (a ConstantOfShape of
// [2^30, 2^30], an Expand to a huge shape), and a kernel must never be handed
// an allocation that could not be made. The executor checks every shape
// rule's answer with it as the nodes run.
Status check_output_sizes(const InferContext& ictx, const Node& node, uint64_t budget);

}  // namespace ort_train
