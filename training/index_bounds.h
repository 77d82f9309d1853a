// The rows an integer model input may index. Where a graph input is a
// Gather's indices (token ids into an embedding table) and the table is a
// weight, its values must lie in [-rows, rows): data that breaks this fails
// at that Gather mid-run. Checked on the held-out data before step 1, so a
// wrong --eval-data costs no training (issue 51).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train {

struct IndexBound {
  std::string input;  // the graph input
  std::string node;   // the Gather reading it
  int64_t rows = 0;   // the table's size along the gathered axis
};

std::vector<IndexBound> gather_index_bounds(const Graph& g);

// The first value of `batch` outside its input's bound, as an error naming
// the input, the value, the node and the table's rows.
Status check_index_bounds(const std::map<std::string, Tensor>& batch, const std::vector<IndexBound>& bounds);

}  // namespace ort_train
