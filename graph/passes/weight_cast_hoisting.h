// weight_cast_hoisting: a Cast of a float32 trainable weight (a pinned
// initializer) to float16 or bfloat16, which autocast puts before every GEMM
// that reads the weight, becomes an initializer holding the 16-bit copy, so
// the step does not cast the weight again in every forward. The trainer
// refreshes each copy from its weight once per step, after the update. The
// pass records each copy in the model's metadata ("ort_train.weight_copy:" +
// copy -> weight), so a saved step graph says what its copies are copies of.
// Run by the step-graph builder (training/step_graph.h), not by default.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

struct HoistedCopy {
  std::string weight;  // the float32 trainable weight
  std::string copy;    // the initializer holding its 16-bit copy (the Cast's output)
};

// The copies the pass made, in the order it made them (graph order of the Casts).
std::vector<HoistedCopy> hoisted_weight_copies(const Model& model);

}  // namespace ort_train
