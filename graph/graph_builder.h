// Appends nodes to an already inferred model, inferring each one as it is added,
// so the code that writes the loss and the backward graph can ask any value's
// dtype and shape. It also hides the ONNX ops whose form changed between opsets
// (ReduceSum's axes, Unsqueeze/Squeeze's axes): helpers emit the form the
// model's opset expects, so a rule written once works for every opset.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/op_schema.h"
#include "graph/shape_inference.h"

namespace ort_train {

class GraphBuilder {
 public:
  // `model` must outlive the builder; infers the existing graph once.
  static Result<std::unique_ptr<GraphBuilder>> create(Model& model, const std::map<std::string, int64_t>& dim_values);

  Model& model() { return model_; }
  // --- Emitting -------------------------------------------------------
  // Adds a node with `num_outputs` fresh outputs (named after `hint`) and infers it.
  Result<std::vector<std::string>> add(const std::string& op_type, std::vector<std::string> inputs,
                                       size_t num_outputs, std::vector<Attribute> attributes = {},
                                       const std::string& domain = "", const std::string& hint = "");
  // Single-output shorthand.
  Result<std::string> add1(const std::string& op_type, std::vector<std::string> inputs,
                           std::vector<Attribute> attributes = {}, const std::string& domain = "",
                           const std::string& hint = "");
  // Adds a node whose outputs have the given names (the caller checked they are unused).
  Status add_named(const std::string& op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
                   std::vector<Attribute> attributes = {}, const std::string& domain = "");
  // A new initializer holding `value`; returns its name.
  std::string constant(const Tensor& value, const std::string& hint = "const");
  // Scalar of `dtype` (float types and int64) holding v.
  std::string scalar(double v, DType dtype);
  // 1-D int64 constant.
  std::string ints(const std::vector<int64_t>& values);

  // --- Opset-aware helpers ----------------------------------------------
  Result<std::string> reduce_sum(const std::string& x, const std::vector<int64_t>& axes, bool keepdims);
  Result<std::string> unsqueeze(const std::string& x, const std::vector<int64_t>& axes);
  Result<std::string> squeeze(const std::string& x, const std::vector<int64_t>& axes);
  // Shape of x as a 1-D int64 value (a constant for initializers).
  Result<std::string> shape_of(const std::string& x);
  // Reshape x to the shape of `like` (read at run time).
  Result<std::string> reshape_like(const std::string& x, const std::string& like);
  // Zeros with the shape and dtype of `like`.
  Result<std::string> zeros_like(const std::string& like);
  // x summed over broadcast axes so its shape equals `like`'s; x itself when the
  // shapes are provably equal already.
  Result<std::string> sum_to_shape_of(const std::string& x, const std::string& like);

  // --- Queries ------------------------------------------------------------
  DType dtype(const std::string& v) const;
  const OptShape& shape(const std::string& v) const;
  int64_t rank(const std::string& v) const;  // -1 when unknown
  const Tensor* constant_value(const std::string& v) const { return inferencer_->constant(v); }
  bool same_shape(const std::string& a, const std::string& b) const;
  // Makes `name` unique among every value and node name in the model.
  std::string fresh_name(const std::string& hint);
  int64_t opset(const std::string& domain = "") const { return model_.opset(domain); }
  // Re-infers an existing node after its outputs changed (e.g. an optional output was added).
  Status reinfer(const Node& n) { return inferencer_->infer(n); }
  // Copies a known shape onto a value whose inferred shape is less precise.
  void refine_shape(const std::string& v, const OptShape& shape);

 private:
  GraphBuilder(Model& model) : model_(model) {}
  Model& model_;
  std::unique_ptr<ShapeInferencer> inferencer_;
  std::set<std::string> used_names_;
  size_t counter_ = 0;
};

}  // namespace ort_train
