// Static shape and dtype inference over the whole graph, in topological order,
// using each op's registered shape rule. Values of initializers and Constant
// nodes flow through rules that can use them (Reshape's shape, Slice's starts),
// and rules like Shape produce values, so shape arithmetic exported by PyTorch
// (Shape -> Gather -> Concat -> Reshape) resolves when the input shapes are known.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "graph/op_schema.h"
#include <string>

#include "graph/graph.h"

namespace ort_train {

// Computes a node's outputs from known input values (constant folding of small
// shape arithmetic). graph/ cannot run kernels, so the runtime registers one.
using ConstantEvaluator = std::function<std::optional<std::vector<Tensor>>(
    const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs, InferContext& shapes)>;
void register_constant_evaluator(ConstantEvaluator evaluator);
const ConstantEvaluator& registered_constant_evaluator();

struct ShapeInferenceOptions {
  // Concrete sizes for symbolic dims ("batch" -> 8); applied to graph inputs first.
  std::map<std::string, int64_t> dim_values;
  // Folds nodes whose inputs are all known and whose outputs are small (at most
  // kMaxFoldedElements), so exported shape arithmetic (Shape -> Gather -> Concat
  // -> Reshape) resolves to concrete shapes. Null disables folding.
  ConstantEvaluator evaluate = registered_constant_evaluator();
  static constexpr int64_t kMaxFoldedElements = 4096;
};

// Inference one node at a time, for passes that add nodes to an inferred graph
// (the gradient builder infers each node it emits). Keeps the values that rules
// and folding computed, so later nodes see them.
class ShapeInferencer {
 public:
  // Seeds the values of initializers and graph inputs (with dim_values bound).
  ShapeInferencer(Model& model, ShapeInferenceOptions options = {});
  // Infers node `n` (whose inputs must already be inferred) into model.graph.values.
  Status infer(const Node& n);
  // A new initializer's value and type, visible to later nodes.
  void add_initializer(const std::string& name, const Tensor& value);
  // Known value of a value (initializer, Constant, folded), or nullptr.
  const Tensor* constant(const std::string& name) const;
  // Copies inferred types onto graph outputs that declare none.
  void finish();

 private:
  Model& model_;
  ShapeInferenceOptions options_;
  std::map<std::string, Tensor> constants_;
  std::map<std::string, DimValues> dim_values_;  // partial values of shape tensors
};

// Fills model.graph.values for every node output. Errors name the node.
Status infer_shapes(Model& model, const ShapeInferenceOptions& options = {});

// Every node whose op has no shape rule at its opset, listed together.
Status check_ops_known(const Model& model);

}  // namespace ort_train
