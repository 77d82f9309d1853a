// Gradient of If: another If on the same condition whose branches are the
// branches' vector-Jacobian products. Each gradient branch takes the
// captures and the output gradients GO, recomputes its branch's forward and
// returns the gradient of sum_i <out_i, GO_i> with respect to each capture
// the driver asked for (zeros for a capture the branch does not read). So
// only the branch the condition takes is differentiated, at run time, as
// microsoft/onnxruntime#11268 asked. Loop has no rule of its own: a Loop
// with a trip count fixed at plan time is unrolled before the backward
// (training/unroll_loops.h); Scan has none.
#include "autodiff/gradient_builder.h"
#include "autodiff/gradient_rule.h"
#include "graph/control_flow.h"

namespace ort_train {
namespace {

// A name no value of `m` has.
std::string unused_name(const Model& m, const std::string& hint) {
  std::string name = hint;
  for (int k = 1; m.graph.value(name) || m.graph.is_initializer(name); ++k) name = hint + "_" + std::to_string(k);
  return name;
}

// The vector-Jacobian product of branch `attr`: inputs (captures..., GO...),
// outputs the gradients of the captures at `wanted` (node input indices).
Result<std::shared_ptr<const Graph>> branch_gradient(GradientContext& c, const std::string& attr,
                                                     const std::vector<std::string>& go,
                                                     const std::vector<size_t>& float_outputs,
                                                     const std::vector<size_t>& wanted) {
  const Node& n = c.node();
  std::shared_ptr<const Graph> branch = subgraph(n, attr);
  if (!branch) return c.unsupported_case("'{}' is not a graph", attr);
  // Indexed below by the node's inputs and outputs (the If shape rule refuses
  // a branch that does not fit; a graph built in memory may skip it).
  if (branch->inputs.size() + 1 != n.inputs.size() || branch->outputs.size() != n.outputs.size())
    return invalid_argument("{}: '{}' has {} inputs and {} outputs; the node has {} inputs (a condition, then "
                            "captures) and {} outputs", n.describe(), attr, branch->inputs.size(),
                            branch->outputs.size(), n.inputs.size(), n.outputs.size());
  std::vector<ValueInfo> types;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    ValueInfo v;
    v.dtype = c.dtype(n.inputs[i]);
    v.shape = c.shape(n.inputs[i]);
    types.push_back(std::move(v));
  }
  Model m = subgraph_model(*branch, subgraph_opset(n), types);
  m.opset_imports = c.builder().model().opset_imports;
  std::vector<std::string> go_inputs;
  for (size_t k = 0; k < go.size(); ++k) {
    ValueInfo v;
    v.name = unused_name(m, "grad_of_output_" + std::to_string(float_outputs[k]));
    v.dtype = c.dtype(go[k]);
    v.shape = c.shape(go[k]);
    m.graph.inputs.push_back(v);
    m.graph.values[v.name] = v;
    go_inputs.push_back(v.name);
  }
  std::vector<std::string> outputs;
  for (const ValueInfo& o : m.graph.outputs) outputs.push_back(o.name);
  ASSIGN_OR_RETURN(auto b, GraphBuilder::create(m, {}));
  std::string loss;
  for (size_t k = 0; k < go.size(); ++k) {
    ASSIGN_OR_RETURN(std::string product, b->add1("Mul", {outputs[float_outputs[k]], go_inputs[k]}));
    ASSIGN_OR_RETURN(std::string sum, b->reduce_sum(product, {}, false));
    if (!loss.empty() && b->dtype(loss) != b->dtype(sum))
      return c.unsupported_case("its outputs mix floating-point dtypes");
    if (loss.empty()) loss = sum;
    else { ASSIGN_OR_RETURN(loss, b->add1("Add", {loss, sum})); }
  }
  std::vector<std::string> trainable;
  for (size_t i : wanted) trainable.push_back(m.graph.inputs[i - 1].name);
  GradientGraph grads;
  if (!loss.empty()) { ASSIGN_OR_RETURN(grads, build_gradients(*b, loss, trainable)); }
  std::vector<ValueInfo> results;
  for (const std::string& w : trainable) {
    auto it = grads.gradient.find(w);
    std::string g;
    if (it != grads.gradient.end()) g = it->second;
    else { ASSIGN_OR_RETURN(g, b->zeros_like(w)); }  // a capture this branch does not read
    ValueInfo v = *m.graph.value(g);
    results.push_back(v);
  }
  m.graph.outputs = results;
  m.graph.name = branch->name + "_grad";
  return std::make_shared<const Graph>(std::move(m.graph));
}

Status if_gradient(GradientContext& c) {
  const Node& n = c.node();
  std::vector<size_t> float_outputs;
  std::vector<std::string> go;
  for (size_t i = 0; i < c.num_outputs(); ++i) {
    if (!dtype_is_float(c.dtype(c.O(i)))) continue;
    ASSIGN_OR_RETURN(std::string g, c.GO_or_zeros(i));
    float_outputs.push_back(i);
    go.push_back(g);
  }
  std::vector<size_t> wanted;
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.needs_GI(i)) wanted.push_back(i);
  if (wanted.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(auto then_grad, branch_gradient(c, "then_branch", go, float_outputs, wanted));
  ASSIGN_OR_RETURN(auto else_grad, branch_gradient(c, "else_branch", go, float_outputs, wanted));
  // The gradient branches recompute the forward ones: their names get a
  // prefix of their own, so no name is defined twice in the model.
  then_grad = with_prefixed_names(*then_grad, c.builder().fresh_name(n.name + "_grad/then") + "/");
  else_grad = with_prefixed_names(*else_grad, c.builder().fresh_name(n.name + "_grad/else") + "/");
  std::vector<std::string> inputs = n.inputs;
  inputs.insert(inputs.end(), go.begin(), go.end());
  std::vector<Attribute> attrs{Attribute::make_graph("then_branch", then_grad),
                               Attribute::make_graph("else_branch", else_grad),
                               Attribute::make_int("num_captures", static_cast<int64_t>(inputs.size() - 1)),
                               Attribute::make_int("onnx_opset", subgraph_opset(n))};
  ASSIGN_OR_RETURN(auto grads, c.add("If", inputs, wanted.size(), attrs, kOrtTrainDomain));
  for (size_t k = 0; k < wanted.size(); ++k) c.set_GI(wanted[k], grads[k]);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "If").no_gradient_for({0}).rule(if_gradient);

}  // namespace ort_train
