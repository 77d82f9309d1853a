// Einsum's equation resolved against operand shapes, shared by its shape rule
// and kernel: every label (letters, and one label per broadcast '...' dim) gets
// a size; each operand and the output become lists of labels.
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

struct EinsumPlan {
  std::vector<int64_t> label_sizes;             // per label id
  std::vector<std::vector<int>> operand_labels;  // per operand, per dim: label id
  std::vector<int> output_labels;               // per output dim: label id
};

// The most label-value combinations times operands that plan_einsum accepts:
// about 2^32 multiplications, a minute of the direct kernel on one core.
constexpr int64_t kEinsumMaxProducts = int64_t{1} << 32;

// Resolves `equation` for operands of the given dims (unknown dims as -1:
// sizes then come from other operands, or stay -1). Refuses an equation
// whose known sizes exceed kEinsumMaxProducts.
Result<EinsumPlan> plan_einsum(const Node& node, const std::string& equation, const std::vector<Dims>& operands);

}  // namespace ort_train
