// The error for an index read from data that lies outside what it indexes
// (numerics/index_fault.h), worded once: the CPU kernels return it when they
// find the index, the GPU (runtime/cuda/index_faults.h) when its stream is
// next waited on after a kernel recorded one.
#pragma once
#include <string>
#include <vector>

#include "graph/status.h"
#include "numerics/index_fault.h"

namespace ort_train {

struct Node;

Status index_fault_error(const std::string& node, const IndexFault& fault);

inline Status axis_index_error(const std::string& node, int64_t value, int64_t axis_size) {
  return index_fault_error(node, {1, static_cast<int32_t>(IndexFaultKind::kAxisIndex), value, 0, 0, axis_size});
}
inline Status label_error(const std::string& node, int64_t label, int64_t classes) {
  return index_fault_error(node, {1, static_cast<int32_t>(IndexFaultKind::kLabel), label, 0, 0, classes});
}
inline Status plane_index_error(const std::string& node, int64_t value, int64_t position, int64_t low, int64_t high) {
  return index_fault_error(node, {1, static_cast<int32_t>(IndexFaultKind::kPlaneIndex), value, position, low, high});
}

// Wraps each negative index of an axis of `axis_size` into [0, axis_size), in
// place; the first one outside [-axis_size, axis_size) is `node`'s error.
Status wrap_axis_indices(const Node& node, std::vector<int64_t>& indices, int64_t axis_size);

}  // namespace ort_train
