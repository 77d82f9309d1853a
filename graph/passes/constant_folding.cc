// constant_folding: a node whose inputs are all constants is run once, now,
// and its outputs become initializers under the same value names, so its
// readers and the graph outputs need no rewiring; the node is removed.
//
// Constants are initializers that are neither protected (frozen: trainable
// parameters, training state) nor graph inputs: ONNX lets a feed override an
// initializer listed as an input, so its value is not known until run time.
// Constant nodes fold into initializers too, and since folding walks the
// nodes in order, a chain of constant nodes folds in one application.
//
// Not folded: random ops, ops whose behaviour depends on the run or belongs
// to the training step (graph/passes/op_traits.h), nodes writing a protected
// value or a graph input, nodes whose outputs total more than
// kMaxFoldedElements (a broadcast of a scalar to a huge tensor would turn a
// transient activation into a permanent initializer), and nodes the evaluator
// cannot run (no kernel, kernel error): those stay for run time.
//
// A graph output may end up an initializer: ONNX allows it and the executor
// returns the initializer's tensor.
//
// A weight load_model left mapped from its file is read in just before it
// folds (graph/mapped_external_data.h); in the forward phase of a 16-bit
// build it is not folded at all, so that each frozen weight is read, cast to
// 16 bits and dropped in turn after autocast.
//
// An initializer that a folded node was the last reader of goes at once, not
// at the next dead_code_elimination: folding the Transpose of every
// nn.Linear weight of a frozen model (LoRA) or its Cast to bf16 would
// otherwise hold the originals and the folded copies together, twice the
// weights at the peak.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "graph/control_flow.h"
#include "graph/graph_index.h"
#include "graph/mapped_external_data.h"
#include "graph/op_schema.h"
#include "graph/passes/op_traits.h"
#include "graph/passes/pass.h"
#include "graph/shape_inference.h"

namespace ort_train {
namespace {

// 16M elements (64 MiB of float) over all outputs of one node: generous for
// folded weights (a transposed or reshaped embedding), small enough that a
// Expand/ConstantOfShape blow-up is left to run time.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;

// The node's outputs computed from constant inputs (nullptr marks an omitted
// input), or nullopt when it cannot or should not be folded. `read_in` runs
// just before a kernel reads the values (weights still in their file are read
// then, once the fold's size is known to be allowed); its error is the pass's.
std::optional<std::vector<Tensor>> evaluate_node(const Node& n, int64_t opset, const std::vector<const Tensor*>& values,
                                                 const std::function<Status()>& read_in, Status& error) {
  const OpSchema* schema = OpRegistry::instance().find(n.domain, n.op_type, opset);
  if (!schema) return std::nullopt;
  std::vector<OptShape> shapes(values.size());
  std::vector<InferContext::Input> inputs(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    if (!values[k]) continue;  // omitted optional input: no shape marks it absent
    shapes[k] = shape_from_dims(values[k]->dims());
    inputs[k] = {values[k]->dtype(), &shapes[k], values[k]};
  }
  InferContext ctx(n, opset, std::move(inputs));
  if (!schema->infer(ctx).ok()) return std::nullopt;

  std::vector<Tensor> out(n.outputs.size());
  int64_t total = 0;
  bool needs_kernel = false;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    const InferContext::Output& o = ctx.output(k);
    if (o.value) {  // the rule computed it (Constant, Shape, Size); a copy, so no storage is shared
      out[k] = o.value->clone();
      total += o.value->numel();
      continue;
    }
    if (!o.shape || !shape_fully_known(*o.shape)) return std::nullopt;
    needs_kernel = true;
    total += num_elements(dims_from_shape(*o.shape));
  }
  if (total > kMaxFoldedElements) return std::nullopt;
  if (needs_kernel) {
    const ConstantEvaluator& evaluate = registered_constant_evaluator();
    if (!evaluate) return std::nullopt;
    error = read_in();
    if (!error.ok()) return std::nullopt;
    auto computed = evaluate(n, opset, values, ctx);  // clones its outputs: nothing aliases an input
    if (!computed) return std::nullopt;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty() || out[k].defined()) continue;
      if (k >= computed->size() || !(*computed)[k].defined()) return std::nullopt;
      out[k] = std::move((*computed)[k]);
    }
  }
  for (size_t k = 0; k < n.outputs.size(); ++k)
    if (!n.outputs[k].empty() && dtype_size(out[k].dtype()) == 0) return std::nullopt;  // strings: not storable
  return out;
}

class ConstantFolding : public Pass {
 public:
  std::string name() const override { return "constant_folding"; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    const std::set<std::string> keep = protected_values(g, ctx);
    std::set<std::string> graph_inputs;
    for (const ValueInfo& v : g.inputs) graph_inputs.insert(v.name);
    auto constant = [&](const std::string& name) -> const Tensor* {
      if (keep.count(name) || graph_inputs.count(name)) return nullptr;
      auto it = g.initializers.find(name);
      return it == g.initializers.end() ? nullptr : &it->second;
    };

    // Reads left per value (a folded output is an initializer that can be
    // released in turn); none is released where a default-domain If/Loop/Scan
    // could read one from inside its subgraphs.
    std::unordered_map<std::string, int64_t> reads;
    const bool release = std::none_of(g.nodes.begin(), g.nodes.end(), is_onnx_control_flow);
    if (release) {
      for (const Node& n : g.nodes)
        for (const std::string& in : n.inputs)
          if (!in.empty()) ++reads[in];
      for (const ValueInfo& v : g.outputs) ++reads[v.name];  // never released
    }
    std::set<std::string> released;
    std::vector<size_t> folded;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (!is_foldable_op(n)) continue;
      bool writable = false;  // has an output, none of them protected or a graph input
      bool blocked = false;
      for (const std::string& o : n.outputs) {
        if (o.empty()) continue;
        writable = true;
        blocked = blocked || keep.count(o) || graph_inputs.count(o);
      }
      if (!writable || blocked) continue;
      std::vector<const Tensor*> values;
      bool all_constant = true;
      for (const std::string& in : n.inputs) {
        const Tensor* t = in.empty() ? nullptr : constant(in);
        all_constant = all_constant && (in.empty() || t);
        values.push_back(t);
      }
      if (!all_constant) continue;
      // A weight still in its file is read just before it folds, or left
      // for later while autocast is to come (see PassContext::autocast_to_come).
      const bool mapped =
          std::any_of(values.begin(), values.end(), [](const Tensor* t) { return t && is_mapped_external(*t); });
      if (mapped && ctx.autocast_to_come) continue;
      auto read_mapped = [&]() -> Status {  // read_in leaves a tensor that is not mapped as it is
        for (const Tensor* t : values)
          if (t) RETURN_IF_ERROR(read_in(*t));
        return Status::Ok();
      };
      Status read_error;
      auto outputs = evaluate_node(n, model.opset(n.domain), values, read_mapped, read_error);
      RETURN_IF_ERROR(read_error);
      if (!outputs) {
        spdlog::debug("constant_folding: {} left for run time", n.describe());
        continue;
      }
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const std::string& name = n.outputs[k];
        if (name.empty()) continue;
        Tensor& t = (*outputs)[k];
        ValueInfo& info = g.values[name];
        info.name = name;
        info.dtype = t.dtype();
        info.shape = shape_from_dims(t.dims());
        g.initializers[name] = std::move(t);
        g.initializer_order.push_back(name);
      }
      folded.push_back(i);
      for (const std::string& in : n.inputs) {
        auto r = reads.find(in);
        if (r == reads.end() || --r->second > 0 || !constant(in)) continue;
        g.initializers.erase(in);
        g.values.erase(in);
        released.insert(in);
      }
    }
    std::erase_if(g.initializer_order, [&](const std::string& name) { return released.count(name) > 0; });
    std::erase_if(g.declared_value_infos, [&](const std::string& name) { return released.count(name) > 0; });
    erase_nodes(g, folded);
    ctx.count(static_cast<int64_t>(folded.size()));
    return !folded.empty();
  }
};

ORT_REGISTER_PASS(ConstantFolding);

}  // namespace
}  // namespace ort_train
