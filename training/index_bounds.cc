#include "training/index_bounds.h"

namespace ort_train {

std::vector<IndexBound> gather_index_bounds(const Graph& g) {
  std::vector<IndexBound> bounds;
  for (const Node& n : g.nodes) {
    if (n.op_type != "Gather" || !n.domain.empty() || n.inputs.size() < 2) continue;
    const std::string& table = n.inputs[0];
    const std::string& indices = n.inputs[1];
    if (!g.is_initializer(table) || g.is_initializer(indices)) continue;
    bool is_graph_input = false;
    for (const ValueInfo& v : g.inputs) is_graph_input = is_graph_input || v.name == indices;
    if (!is_graph_input) continue;
    const Dims& dims = g.initializers.at(table).dims();
    int64_t rank = static_cast<int64_t>(dims.size()), axis = n.attr_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;  // the shape rule reports it
    bounds.push_back(IndexBound{indices, n.name, dims[static_cast<size_t>(axis)]});
  }
  return bounds;
}

Status check_index_bounds(const std::map<std::string, Tensor>& batch, const std::vector<IndexBound>& bounds) {
  for (const IndexBound& b : bounds) {
    auto it = batch.find(b.input);
    if (it == batch.end()) continue;
    const Tensor& t = it->second;
    if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) continue;  // a dtype error is the executor's
    for (int64_t v : t.to_int64_vector()) {
      if (v < -b.rows || v >= b.rows)
        return invalid_argument("input '{}' holds {}, but node '{}' (Gather) indexes a table of {} rows with it",
                                b.input, v, b.node, b.rows);
    }
  }
  return Status::Ok();
}

}  // namespace ort_train
