// LpNormalization and MeanVarianceNormalization see their input as rows: the
// elements one output statistic covers. Each row is `row` offsets (the
// normalized axes) added to a base offset (one per combination of the other
// axes); the CPU and CUDA kernels walk the same tables.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

struct NormalizedRows {
  std::vector<int64_t> base;  // offset of each row's first element
  std::vector<int64_t> row;   // offsets within a row
  int p = 2;                  // LpNormalization's p (1 or 2)
};

// LpNormalization (axis, p) or MeanVarianceNormalization (axes, default
// [0, 2, 3]); their com.ort_train gradients carry the same attributes.
Result<NormalizedRows> normalized_rows(const Node& node, const Dims& dims, bool mvn);

}  // namespace ort_train
