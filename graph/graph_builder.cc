#include "graph/graph_builder.h"

#include <fmt/format.h>

namespace ort_train {

Result<std::unique_ptr<GraphBuilder>> GraphBuilder::create(Model& model,
                                                           const std::map<std::string, int64_t>& dim_values) {
  std::unique_ptr<GraphBuilder> b(new GraphBuilder(model));
  RETURN_IF_ERROR(check_ops_known(model));
  ShapeInferenceOptions options;
  options.dim_values = dim_values;
  b->inferencer_ = std::make_unique<ShapeInferencer>(model, options);
  for (const Node& n : model.graph.nodes) RETURN_IF_ERROR(b->inferencer_->infer(n));
  b->inferencer_->finish();
  Graph& g = model.graph;
  for (const auto& [name, v] : g.values) b->used_names_.insert(name);
  for (const ValueInfo& v : g.inputs) b->used_names_.insert(v.name);
  for (const ValueInfo& v : g.outputs) b->used_names_.insert(v.name);
  for (const Node& n : g.nodes) {
    b->used_names_.insert(n.name);
    for (const auto& o : n.outputs) b->used_names_.insert(o);
  }
  return b;
}

std::string GraphBuilder::fresh_name(const std::string& hint) {
  std::string base = hint.empty() ? "t" : hint;
  std::string name = base;
  while (used_names_.count(name)) name = fmt::format("{}_{}", base, ++counter_);
  used_names_.insert(name);
  return name;
}

Status GraphBuilder::add_named(const std::string& op_type, std::vector<std::string> inputs,
                               std::vector<std::string> outputs, std::vector<Attribute> attributes,
                               const std::string& domain) {
  if (!domain.empty() && model_.opset(domain) == 0) model_.opset_imports.push_back({domain, 1});
  Node n;
  n.op_type = op_type;
  n.domain = domain;
  n.name = fresh_name(outputs.empty() ? op_type : outputs[0] + "/" + op_type);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  for (const auto& o : n.outputs) used_names_.insert(o);
  model_.graph.nodes.push_back(std::move(n));
  const Node& added = model_.graph.nodes.back();
  Status st = inferencer_->infer(added);
  if (!st.ok()) return st.with_context("while building the training graph");
  return Status::Ok();
}

Result<std::vector<std::string>> GraphBuilder::add(const std::string& op_type, std::vector<std::string> inputs,
                                                   size_t num_outputs, std::vector<Attribute> attributes,
                                                   const std::string& domain, const std::string& hint) {
  std::vector<std::string> outs;
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(fresh_name(hint.empty() ? op_type : hint));
  RETURN_IF_ERROR(add_named(op_type, std::move(inputs), outs, std::move(attributes), domain));
  return outs;
}

Result<std::string> GraphBuilder::add1(const std::string& op_type, std::vector<std::string> inputs,
                                       std::vector<Attribute> attributes, const std::string& domain,
                                       const std::string& hint) {
  ASSIGN_OR_RETURN(auto outs, add(op_type, std::move(inputs), 1, std::move(attributes), domain, hint));
  return outs[0];
}

std::string GraphBuilder::constant(const Tensor& value, const std::string& hint) {
  std::string name = fresh_name(hint);
  Graph& g = model_.graph;
  g.initializers[name] = value;
  g.initializer_order.push_back(name);
  inferencer_->add_initializer(name, value);
  return name;
}

std::string GraphBuilder::scalar(double v, DType dtype) {
  switch (dtype) {
    case DType::kDouble: return constant(Tensor::from_vector<double>({}, {v}), "scalar");
    case DType::kInt64: return constant(Tensor::from_vector<int64_t>({}, {static_cast<int64_t>(v)}), "scalar");
    default: return constant(Tensor::from_vector<float>({}, {static_cast<float>(v)}), "scalar");
  }
}

std::string GraphBuilder::ints(const std::vector<int64_t>& values) {
  return constant(Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values), "ints");
}

Result<std::string> GraphBuilder::reduce_sum(const std::string& x, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<Attribute> attrs{Attribute::make_int("keepdims", keepdims ? 1 : 0)};
  if (opset() >= 13) return add1("ReduceSum", {x, ints(axes)}, attrs);
  attrs.push_back(Attribute::make_ints("axes", axes));
  return add1("ReduceSum", {x}, attrs);
}

Result<std::string> GraphBuilder::unsqueeze(const std::string& x, const std::vector<int64_t>& axes) {
  if (opset() >= 13) return add1("Unsqueeze", {x, ints(axes)});
  return add1("Unsqueeze", {x}, {Attribute::make_ints("axes", axes)});
}

Result<std::string> GraphBuilder::squeeze(const std::string& x, const std::vector<int64_t>& axes) {
  if (opset() >= 13) return add1("Squeeze", {x, ints(axes)});
  return add1("Squeeze", {x}, {Attribute::make_ints("axes", axes)});
}

Result<std::string> GraphBuilder::shape_of(const std::string& x) {
  // An initializer's shape never changes: a constant saves a node per parameter.
  // (Other values' shapes may hold dims bound for this build only, so they are read at run time.)
  auto it = model_.graph.initializers.find(x);
  if (it != model_.graph.initializers.end()) return ints(it->second.dims());
  return add1("Shape", {x});
}

Result<std::string> GraphBuilder::reshape_like(const std::string& x, const std::string& like) {
  if (same_shape(x, like)) return x;
  ASSIGN_OR_RETURN(std::string s, shape_of(like));
  ASSIGN_OR_RETURN(std::string r, add1("Reshape", {x, s}));
  refine_shape(r, shape(like));
  return r;
}

Result<std::string> GraphBuilder::zeros_like(const std::string& like) {
  ASSIGN_OR_RETURN(std::string s, shape_of(like));
  Tensor zero = dtype(like) == DType::kDouble ? Tensor::from_vector<double>({1}, {0.0})
                                              : Tensor::from_vector<float>({1}, {0.f});
  ASSIGN_OR_RETURN(std::string z, add1("ConstantOfShape", {s}, {Attribute::make_tensor("value", zero)}));
  refine_shape(z, shape(like));
  return z;
}

Result<std::string> GraphBuilder::sum_to_shape_of(const std::string& x, const std::string& like) {
  if (same_shape(x, like)) return x;
  ASSIGN_OR_RETURN(std::string s, shape_of(like));
  ASSIGN_OR_RETURN(std::string r, add1("SumTo", {x, s}, {}, kOrtTrainDomain));
  refine_shape(r, shape(like));
  return r;
}

DType GraphBuilder::dtype(const std::string& v) const {
  const ValueInfo* info = model_.graph.value(v);
  return info ? info->dtype : DType::kUndefined;
}

const OptShape& GraphBuilder::shape(const std::string& v) const {
  static const OptShape kUnknown;
  const ValueInfo* info = model_.graph.value(v);
  return info ? info->shape : kUnknown;
}

int64_t GraphBuilder::rank(const std::string& v) const {
  const OptShape& s = shape(v);
  return s ? static_cast<int64_t>(s->size()) : -1;
}

bool GraphBuilder::same_shape(const std::string& a, const std::string& b) const {
  const OptShape& sa = shape(a);
  const OptShape& sb = shape(b);
  if (!sa || !sb || sa->size() != sb->size()) return false;
  for (size_t i = 0; i < sa->size(); ++i) {
    const Dim& da = (*sa)[i];
    const Dim& db = (*sb)[i];
    bool equal = da.known() ? (db.known() && da.value == db.value) : (!da.symbol.empty() && da.symbol == db.symbol);
    if (!equal) return false;
  }
  return true;
}

void GraphBuilder::refine_shape(const std::string& v, const OptShape& s) {
  if (!s) return;
  auto it = model_.graph.values.find(v);
  if (it == model_.graph.values.end()) return;
  OptShape& cur = it->second.shape;
  if (!cur || cur->size() != s->size()) {
    cur = s;
    return;
  }
  for (size_t i = 0; i < s->size(); ++i)
    if (!(*cur)[i].known() && ((*s)[i].known() || (*cur)[i].symbol.empty())) (*cur)[i] = (*s)[i];
}

}  // namespace ort_train
