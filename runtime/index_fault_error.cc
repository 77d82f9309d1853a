#include "runtime/index_fault_error.h"

#include "graph/graph.h"

namespace ort_train {

Status index_fault_error(const std::string& node, const IndexFault& f) {
  switch (static_cast<IndexFaultKind>(f.kind)) {
    case IndexFaultKind::kAxisIndex:
      return invalid_argument("{}: index {} is out of range for an axis of size {}", node, f.value, f.high);
    case IndexFaultKind::kLabel:
      return invalid_argument("{}: label {} is out of range for {} classes", node, f.value, f.high);
    case IndexFaultKind::kPlaneIndex:
      return invalid_argument("{}: index {} at position {} is outside its plane of X [{}, {})", node, f.value,
                              f.position, f.low, f.high);
  }
  return make_error(ErrorCode::kInternal, "{}: an index fault of unknown kind {}", node, f.kind);
}

Status wrap_axis_indices(const Node& node, std::vector<int64_t>& indices, int64_t axis_size) {
  for (int64_t& v : indices) {
    const int64_t k = wrap_axis_index(v, axis_size);
    if (k < 0) return axis_index_error(node.describe(), v, axis_size);
    v = k;
  }
  return Status::Ok();
}

}  // namespace ort_train
