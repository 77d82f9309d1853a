#include "runtime/memory_estimate.h"

#include <limits>
#include <set>
#include <string>
#include <unordered_map>

#include "graph/passes/op_traits.h"
#include "runtime/allocator.h"

namespace ort_train {

namespace {

Status check_output_bytes(const Node& node, size_t i, DType dtype, const Shape& shape, uint64_t budget) {
  if (!shape_fully_known(shape) || dtype_size(dtype) == 0) return Status::Ok();
  auto bytes = checked_nbytes(dtype, dims_from_shape(shape));
  if (!bytes || (budget > 0 && *bytes > budget))
    return invalid_argument("{}: output {} of shape {} ({}) needs {} bytes, more than the memory budget of {} bytes",
                            node.describe(), i, shape_to_string(shape), dtype_name(dtype),
                            bytes ? std::to_string(*bytes) : std::string("over 2^64"), budget);
  return Status::Ok();
}

}  // namespace

Status check_output_sizes(const InferContext& ictx, const Node& node, uint64_t budget) {
  for (size_t i = 0; i < ictx.num_outputs(); ++i) {
    const auto& o = ictx.output(i);
    if (o.shape) RETURN_IF_ERROR(check_output_bytes(node, i, o.dtype, *o.shape, budget));
  }
  return Status::Ok();
}

Status check_plan_fits(const Model& model, const MemoryEstimate& est, const Device& device) {
  uint64_t budget = device.memory_budget();
  // First each output on its own, so a refusal names the node that asks too much.
  for (const Node& n : model.graph.nodes)
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const ValueInfo* v = n.outputs[i].empty() ? nullptr : model.graph.value(n.outputs[i]);
      if (v && v->shape) RETURN_IF_ERROR(check_output_bytes(n, i, v->dtype, *v->shape, budget));
    }
  if (budget == 0 || !est.complete) return Status::Ok();
  uint64_t need = est.initializer_bytes + est.peak_activation_bytes;
  if (need <= budget) return Status::Ok();
  return invalid_argument("the plan needs {:.1f} MiB on {} (weights {:.1f} MiB, peak activations {:.1f} MiB), more "
                          "than the memory budget of {:.1f} MiB{}",
                          need / 1048576.0, device.description(), est.initializer_bytes / 1048576.0,
                          est.peak_activation_bytes / 1048576.0, budget / 1048576.0,
                          memory_limit() ? " set by --max-memory"
                                         : " (the device's memory; on the host at most RLIMIT_AS and the cgroup's limit)");
}

MemoryEstimate estimate_memory(const Model& model, const std::set<std::string>& bound) {
  MemoryEstimate est;
  const Graph& g = model.graph;
  for (const auto& [name, t] : g.initializers) est.initializer_bytes += t.nbytes();
  // Each value's buffer: its own, or for a view op's output its input's (the root).
  std::unordered_map<std::string, std::string> root;
  auto root_of = [&](const std::string& v) -> const std::string& {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  for (const Node& n : g.nodes)
    if (is_view_op(n) && !n.inputs.empty() && !n.outputs.empty() && !n.outputs[0].empty())
      root[n.outputs[0]] = root_of(n.inputs[0]);
  std::unordered_map<std::string, size_t> last_use;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].inputs) last_use[root_of(in)] = i;
  // A bound output's producer writes into the caller's memory, through an
  // Identity too (Executor::bind_output), so its root is not counted either.
  std::set<std::string> held;
  for (const std::string& b : bound) held.insert(root_of(b));
  std::unordered_map<std::string, bool> is_output;  // by root: an output's buffer lives to the end
  for (const ValueInfo& o : g.outputs) is_output[root_of(o.name)] = true;
  auto sized = [&](const ValueInfo* v) {
    return v && v->shape && shape_fully_known(*v->shape) && dtype_size(v->dtype) != 0;
  };
  auto bytes_of = [&](const std::string& name) -> size_t {
    const ValueInfo* v = g.value(name);
    if (!sized(v)) {
      est.complete = false;
      return 0;
    }
    // A shape from a file may overflow 64 bits: it counts as all the memory there is.
    auto bytes = checked_nbytes(v->dtype, dims_from_shape(*v->shape));
    return bytes && *bytes <= (uint64_t{1} << 62) ? allocator_bin_size(*bytes) : std::numeric_limits<size_t>::max() / 4;
  };
  size_t live = 0;
  std::vector<std::vector<std::string>> dies(g.nodes.size());
  for (const auto& [name, idx] : last_use)
    if (!g.is_initializer(name) && !is_output.count(name)) dies[idx].push_back(name);
  std::set<std::string> feeds;
  for (const ValueInfo* v : g.required_inputs()) {
    feeds.insert(v->name);
    live = std::min(live + bytes_of(v->name), std::numeric_limits<size_t>::max() / 2);
  }
  est.peak_activation_bytes = live;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& o : g.nodes[i].outputs)
      if (!o.empty() && !root.count(o) && !held.count(o)) {
        ++(sized(g.value(o)) ? est.sized : est.unsized);
        live = std::min(live + bytes_of(o), std::numeric_limits<size_t>::max() / 2);
      }
    if (live > est.peak_activation_bytes) {
      est.peak_activation_bytes = live;
      est.peak_at = i;
    }
    for (const std::string& d : dies[i])
      if (!feeds.count(d) && !held.count(d)) live -= std::min(live, bytes_of(d));
  }
  return est;
}

}  // namespace ort_train
