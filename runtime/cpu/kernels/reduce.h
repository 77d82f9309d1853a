// The CPU sum reduction, shared with kernels that reduce as one of their steps
// (SumTo, gradient kernels summing over broadcast axes).
#pragma once
#include <vector>

#include "graph/tensor.h"

namespace ort_train {

// Sums x over the dims marked in `reduced` (one flag per dim of x) into `out`,
// whose element count is the product of the kept dims. False for a non-numeric dtype.
bool sum_axes(const Tensor& x, const std::vector<bool>& reduced, Tensor& out);

}  // namespace ort_train
