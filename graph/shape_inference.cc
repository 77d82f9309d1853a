#include "graph/shape_inference.h"

#include <fmt/format.h>

#include "graph/op_schema.h"

namespace ort_train {

namespace {
ConstantEvaluator& evaluator_slot() {
  static ConstantEvaluator e;
  return e;
}
}  // namespace

void register_constant_evaluator(ConstantEvaluator evaluator) { evaluator_slot() = std::move(evaluator); }
const ConstantEvaluator& registered_constant_evaluator() { return evaluator_slot(); }

namespace {

// Nodes of `g` and of its subgraphs (named "outer/inner") without a shape rule.
void list_unknown_ops(const Model& model, const Graph& g, int64_t onnx_opset, const std::string& prefix,
                      std::vector<std::string>& missing) {
  for (const Node& n : g.nodes) {
    int64_t opset = n.domain.empty() ? onnx_opset : model.opset(n.domain);
    if (!OpRegistry::instance().find(n.domain, n.op_type, opset)) {
      std::string d = n.domain.empty() ? "ai.onnx" : n.domain;
      missing.push_back(fmt::format("  {}{} ({} opset {}{})", prefix, n.name, n.op_type, opset,
                                    n.domain.empty() ? "" : ", domain " + d));
    }
    for (const Attribute& a : n.attributes)
      if (a.g) list_unknown_ops(model, *a.g, onnx_opset, prefix + n.name + "/", missing);
  }
}

}  // namespace

Status check_ops_known(const Model& model) {
  std::vector<std::string> missing;
  list_unknown_ops(model, model.graph, model.opset(""), "", missing);
  if (missing.empty()) return Status::Ok();
  std::string msg = fmt::format("{} node(s) use ops this runtime does not support:", missing.size());
  for (const auto& m : missing) msg += "\n" + m;
  return unsupported("{}", msg);
}

ShapeInferencer::ShapeInferencer(Model& model, ShapeInferenceOptions options)
    : model_(model), options_(std::move(options)) {
  Graph& g = model.graph;
  constants_.insert(g.initializers.begin(), g.initializers.end());
  for (const auto& [name, t] : g.initializers) g.values[name] = ValueInfo{name, t.dtype(), shape_from_dims(t.dims()), ""};
  for (const ValueInfo& declared : g.inputs) {
    if (g.is_initializer(declared.name)) continue;
    ValueInfo in = declared;
    if (in.shape)
      for (Dim& d : *in.shape)
        if (!d.known() && options_.dim_values.count(d.symbol)) d = Dim(options_.dim_values.at(d.symbol));
    g.values[in.name] = std::move(in);
  }
}

void ShapeInferencer::add_initializer(const std::string& name, const Tensor& value) {
  constants_[name] = value;
  model_.graph.values[name] = ValueInfo{name, value.dtype(), shape_from_dims(value.dims()), ""};
}

const Tensor* ShapeInferencer::constant(const std::string& name) const {
  auto it = constants_.find(name);
  return it == constants_.end() ? nullptr : &it->second;
}

Status ShapeInferencer::infer(const Node& n) {
  Graph& g = model_.graph;
  int64_t opset = model_.opset(n.domain);
  const OpSchema* schema = OpRegistry::instance().find(n.domain, n.op_type, opset);
  if (!schema) return unsupported("{}: no shape rule for {} at opset {}", n.describe(), n.op_type, opset);
  static const OptShape kUnknown;
  std::vector<InferContext::Input> inputs;
  for (const std::string& name : n.inputs) {
    InferContext::Input in;
    if (!name.empty()) {
      const ValueInfo* v = g.value(name);
      in.dtype = v ? v->dtype : DType::kUndefined;
      in.shape = v ? &v->shape : &kUnknown;
      in.value = constant(name);
      auto dv = dim_values_.find(name);
      if (dv != dim_values_.end()) in.dim_values = &dv->second;
    }
    inputs.push_back(in);
  }
  std::vector<const Tensor*> values;
  bool all_known = true;
  for (const auto& in : inputs) {
    values.push_back(in.value);
    all_known = all_known && (in.shape == nullptr || in.value != nullptr);
  }
  InferContext ctx(n, opset, std::move(inputs));
  Status st = schema->infer(ctx);
  if (!st.ok()) return st.message().find(n.name) == std::string::npos ? st.with_context(n.describe()) : st;
  if (all_known && options_.evaluate && !n.inputs.empty() && n.op_type != "Dropout") {
    bool small = true;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const auto& o = ctx.output(i);
      small = small && !o.value && o.shape && shape_fully_known(*o.shape) &&
              num_elements(dims_from_shape(*o.shape)) <= ShapeInferenceOptions::kMaxFoldedElements;
    }
    if (small) {
      auto folded = options_.evaluate(n, opset, values, ctx);
      if (folded)
        for (size_t i = 0; i < n.outputs.size() && i < folded->size(); ++i)
          if (!n.outputs[i].empty() && (*folded)[i].defined()) ctx.set_output_value(i, (*folded)[i]);
    }
  }
  // A size list the rule could not compute in full may still be known element by element.
  if (!n.outputs.empty() && !n.outputs[0].empty() && !ctx.output(0).value)
    if (auto dv = propagate_dim_values(n, opset, {dim_values_, constants_, g})) dim_values_[n.outputs[0]] = std::move(*dv);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i].empty()) continue;
    const auto& out = ctx.output(i);
    ValueInfo& info = g.values[n.outputs[i]];
    info.name = n.outputs[i];
    if (out.dtype != DType::kUndefined) info.dtype = out.dtype;
    // An inferred shape wins; a declared one fills in what inference could not tell.
    if (out.shape) {
      if (info.shape && info.shape->size() == out.shape->size()) {
        Shape merged = *out.shape;
        for (size_t k = 0; k < merged.size(); ++k)
          if (!merged[k].known() && merged[k].symbol.empty()) merged[k] = (*info.shape)[k];
        info.shape = std::move(merged);
      } else {
        info.shape = out.shape;
      }
    }
    if (out.value) constants_[n.outputs[i]] = *out.value;
  }
  return Status::Ok();
}

void ShapeInferencer::finish() {
  // Graph outputs carry the inferred types.
  for (ValueInfo& o : model_.graph.outputs)
    if (const ValueInfo* v = model_.graph.value(o.name)) {
      if (o.dtype == DType::kUndefined) o.dtype = v->dtype;
      if (!o.shape) o.shape = v->shape;
    }
}

Status infer_shapes(Model& model, const ShapeInferenceOptions& options) {
  RETURN_IF_ERROR(check_ops_known(model));
  ShapeInferencer inferencer(model, options);
  for (const Node& n : model.graph.nodes) RETURN_IF_ERROR(inferencer.infer(n));
  inferencer.finish();
  return Status::Ok();
}

}  // namespace ort_train
