#include "training/step_graph.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "graph/passes/op_traits.h"
#include "graph/reachability.h"
#include "runtime/vector_ops.h"

namespace ort_train {

namespace {

bool is_output(const Graph& g, const std::string& name) {
  return std::any_of(g.outputs.begin(), g.outputs.end(), [&](const ValueInfo& v) { return v.name == name; });
}

// 1. State outputs whose input is an initializer become graph outputs.
void add_state_outputs(Graph& g, StepGraph& step) {
  for (const Node& n : g.nodes)
    for (const auto& [out, in] : state_outputs(n))
      if (out < n.outputs.size() && !n.outputs[out].empty() && in < n.inputs.size() && g.is_initializer(n.inputs[in]))
        step.state_writebacks.emplace_back(n.outputs[out], n.inputs[in]);
  for (const auto& [out, init] : step.state_writebacks)
    if (!is_output(g, out)) g.outputs.push_back(*g.value(out));
}

// 2. Casts of float32 trainable weights to 16 bits (autocast's, one per GEMM
// that reads the weight) become initializers.
Status hoist_weight_casts(Graph& g, const std::vector<std::string>& trainable, StepGraph& step) {
  std::set<std::string> weights(trainable.begin(), trainable.end());
  std::set<std::string> outputs;
  for (const ValueInfo& v : g.outputs) outputs.insert(v.name);
  ASSIGN_OR_RETURN(VectorOps * host_math, vector_ops(DeviceKind::kCpu));
  Status failed = Status::Ok();
  std::erase_if(g.nodes, [&](const Node& n) {
    if (!failed.ok() || n.op_type != "Cast" || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        outputs.count(n.outputs[0]) || !weights.count(n.inputs[0]) || !g.is_initializer(n.inputs[0]))
      return false;
    const Tensor& weight = g.initializers.at(n.inputs[0]);
    DType to = static_cast<DType>(n.attr_int("to", 0));
    if (weight.dtype() != DType::kFloat || !dtype_is_half(to)) return false;
    Tensor low = Tensor::host(to, weight.dims());
    if (weight.device() == DeviceKind::kCpu) failed = host_math->convert(weight, low);
    else std::memset(low.raw(), 0, low.nbytes());
    g.initializers[n.outputs[0]] = low;
    g.initializer_order.push_back(n.outputs[0]);
    step.hoisted.push_back({n.inputs[0], n.outputs[0]});
    return true;
  });
  return failed;
}

}  // namespace

Result<StepGraph> build_step_graph(const TrainingGraph& tg) { return build_step_graph(tg, tg.model); }

Result<StepGraph> build_step_graph(const TrainingGraph& tg, const Model& model) {
  StepGraph step;
  Model m = model;  // tensors are shared, not copied
  add_state_outputs(m.graph, step);
  RETURN_IF_ERROR(hoist_weight_casts(m.graph, tg.gradients.trainable, step));
  // 3. The loss, the gradients and the state outputs, and what they need.
  std::vector<std::string> outputs = {tg.gradients.loss};
  for (const std::string& w : tg.gradients.trainable) outputs.push_back(tg.gradients.gradient.at(w));
  for (const auto& [out, init] : step.state_writebacks)
    if (std::find(outputs.begin(), outputs.end(), out) == outputs.end()) outputs.push_back(out);
  ASSIGN_OR_RETURN(step.model, extract_subgraph(m, outputs));
  return step;
}

bool is_classification(const LossSpec& loss) {
  return loss.type == "softmax_cross_entropy" || loss.type == "nll";
}

Result<Model> build_eval_graph(const TrainingGraph& tg) {
  std::vector<std::string> outputs{tg.gradients.loss};
  if (is_classification(tg.loss)) outputs.push_back(tg.loss.input);
  return extract_subgraph(tg.model, outputs);
}

}  // namespace ort_train
