// Shape rules of If, Loop and Scan in their explicit form (graph/control_flow.h:
// com.ort_train, captures as trailing inputs). Each infers its subgraphs as
// models of their own, typed by the node's inputs. Output shapes may depend on
// the branch taken or the trips made, so the ops are kShapedByKernel: what is
// not known here stays unknown, and the kernels (runtime/cpu/kernels/
// control_flow.cc) set their outputs.
#include <optional>

#include "graph/control_flow.h"
#include "graph/op_schema.h"
#include "graph/shape_inference.h"

namespace ort_train {
namespace {

ValueInfo type_of(const InferContext& ctx, size_t i) {
  ValueInfo v;
  v.dtype = ctx.input_dtype(i);
  v.shape = ctx.input_shape(i);
  return v;
}

// The subgraph's output types, inferred with its inputs typed as given.
Result<std::vector<ValueInfo>> infer_subgraph(const Node& node, const std::string& attr,
                                              const std::vector<ValueInfo>& inputs) {
  std::shared_ptr<const Graph> g = subgraph(node, attr);
  if (!g) return invalid_argument("{}: attribute '{}' must be a graph", node.describe(), attr);
  if (g->inputs.size() != inputs.size())
    return invalid_argument("{}: '{}' has {} inputs; the node gives it {}", node.describe(), attr, g->inputs.size(),
                            inputs.size());
  Model m = subgraph_model(*g, subgraph_opset(node), inputs);
  Status st = infer_shapes(m);
  if (!st.ok()) return st.with_context(node.describe() + " '" + attr + "'");
  std::vector<ValueInfo> out;
  for (const ValueInfo& o : m.graph.outputs) {
    const ValueInfo* v = m.graph.value(o.name);
    out.push_back(v ? *v : o);
  }
  return out;
}

// Dims both shapes agree on; unknown where they differ (nullopt for ranks that differ).
OptShape merge(const OptShape& a, const OptShape& b) {
  if (!a || !b || a->size() != b->size()) return std::nullopt;
  Shape s(a->size());
  for (size_t i = 0; i < a->size(); ++i)
    if ((*a)[i] == (*b)[i]) s[i] = (*a)[i];
  return s;
}

Status check_scalar_flag(const InferContext& ctx, size_t i, DType want, const char* what) {
  if (!ctx.has_input(i)) return Status::Ok();
  if (ctx.input_dtype(i) != DType::kUndefined && ctx.input_dtype(i) != want)
    return invalid_argument("{}: {} must be {}, not {}", ctx.node().describe(), what, dtype_name(want),
                            dtype_name(ctx.input_dtype(i)));
  const OptShape& s = ctx.input_shape(i);
  if (s && shape_fully_known(*s) && num_elements(dims_from_shape(*s)) != 1)
    return invalid_argument("{}: {} must have one element, not shape {}", ctx.node().describe(), what,
                            shape_to_string(s));
  return Status::Ok();
}

Status if_rule(InferContext& ctx) {
  RETURN_IF_ERROR(check_scalar_flag(ctx, 0, DType::kBool, "the condition"));
  std::vector<ValueInfo> captures;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) captures.push_back(type_of(ctx, i));
  // A known condition (every run, or a constant) needs only its branch inferred.
  const Tensor* cond = ctx.input_value(0);
  std::optional<bool> taken;
  if (cond && cond->dtype() == DType::kBool && cond->numel() == 1) taken = cond->data<bool>()[0];
  const size_t n = ctx.num_outputs();
  // Both branches fit the node even when only one is inferred: If's
  // gradient differentiates both (a file's untaken branch with one output
  // too few was indexed past its end there).
  for (const char* attr : {"then_branch", "else_branch"}) {
    std::shared_ptr<const Graph> g = subgraph(ctx.node(), attr);
    if (!g) return invalid_argument("{}: attribute '{}' must be a graph", ctx.node().describe(), attr);
    if (g->inputs.size() != captures.size() || g->outputs.size() != n)
      return invalid_argument("{}: {} has {} inputs and {} outputs; the node gives it {} and has {}",
                              ctx.node().describe(), attr, g->inputs.size(), g->outputs.size(), captures.size(), n);
  }
  auto branch = [&](const char* attr) { return infer_subgraph(ctx.node(), attr, captures); };
  std::vector<ValueInfo> then_out, else_out;
  if (!taken || *taken) { ASSIGN_OR_RETURN(then_out, branch("then_branch")); }
  if (!taken || !*taken) { ASSIGN_OR_RETURN(else_out, branch("else_branch")); }
  for (size_t i = 0; i < n; ++i) {
    if (taken) {
      const ValueInfo& v = *taken ? then_out[i] : else_out[i];
      ctx.set_output(i, v.dtype, v.shape);
      continue;
    }
    DType t = then_out[i].dtype, e = else_out[i].dtype;
    if (t != DType::kUndefined && e != DType::kUndefined && t != e)
      return invalid_argument("{}: output {} is {} in then_branch and {} in else_branch", ctx.node().describe(), i,
                              dtype_name(t), dtype_name(e));
    ctx.set_output(i, t != DType::kUndefined ? t : e, merge(then_out[i].shape, else_out[i].shape));
  }
  return Status::Ok();
}

Status loop_rule(InferContext& ctx) {
  const Node& node = ctx.node();
  const size_t c = static_cast<size_t>(num_captures(node));
  if (ctx.num_inputs() < 2 + c) return invalid_argument("{}: too few inputs", node.describe());
  const size_t n = ctx.num_inputs() - 2 - c;  // loop-carried values
  RETURN_IF_ERROR(check_scalar_flag(ctx, 0, DType::kInt64, "the trip count M"));
  RETURN_IF_ERROR(check_scalar_flag(ctx, 1, DType::kBool, "the condition"));
  std::vector<ValueInfo> inputs(2);
  inputs[0].dtype = DType::kInt64;
  inputs[0].shape = Shape{};
  inputs[1].dtype = DType::kBool;
  inputs[1].shape = Shape{};
  for (size_t i = 2; i < ctx.num_inputs(); ++i) inputs.push_back(type_of(ctx, i));
  ASSIGN_OR_RETURN(auto body, infer_subgraph(node, "body", inputs));
  if (body.size() < 1 + n || ctx.num_outputs() != body.size() - 1)
    return invalid_argument("{}: the body has {} outputs; it needs the condition, {} loop-carried values and one per "
                            "scan output of the node's {} outputs", node.describe(), body.size(), n,
                            ctx.num_outputs());
  // Trips: M exactly when no condition input is given (the body's condition is then ignored).
  Dim trips;
  const Tensor* m = ctx.input_value(0);
  if (m && !ctx.has_input(1) && m->numel() == 1) trips = Dim(std::max<int64_t>(0, m->to_int64_vector()[0]));
  for (size_t k = 0; k < n; ++k) {
    const ValueInfo& initial = inputs[2 + k];
    ctx.set_output(k, initial.dtype != DType::kUndefined ? initial.dtype : body[1 + k].dtype,
                   merge(initial.shape, body[1 + k].shape));
  }
  for (size_t k = n; k < ctx.num_outputs(); ++k) {
    const ValueInfo& each = body[1 + k];
    OptShape s;
    if (each.shape) {
      Shape stacked{trips};
      stacked.insert(stacked.end(), each.shape->begin(), each.shape->end());
      s = stacked;
    }
    ctx.set_output(k, each.dtype, s);
  }
  return Status::Ok();
}

// Scan before opset 9: (sequence_lens, state..., scans..., captures...), every
// operand [batch, ...], the scans [batch, sequence, ...]; outputs the same.
Status scan8_rule(InferContext& ctx) {
  const Node& node = ctx.node();
  const size_t c = static_cast<size_t>(num_captures(node));
  const int64_t m = node.attr_int("num_scan_inputs", -1);
  if (m < 1 || ctx.num_inputs() < 1 + static_cast<size_t>(m) + c)
    return invalid_argument("{}: num_scan_inputs must be 1 to the number of inputs, not {}", node.describe(), m);
  const size_t scans = static_cast<size_t>(m), n = ctx.num_inputs() - 1 - scans - c;
  if (ctx.has_input(0) && ctx.input_dtype(0) != DType::kInt64 && ctx.input_dtype(0) != DType::kUndefined)
    return invalid_argument("{}: sequence_lens must be int64", node.describe());
  std::vector<ValueInfo> inputs;
  Dim batch, length;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    ValueInfo v = type_of(ctx, i);
    const bool is_scan = i > n && i <= n + scans, is_state = i <= n;
    const size_t drop = is_scan ? 2 : is_state ? 1 : 0;
    if (v.shape && drop) {
      if (v.shape->size() < drop)
        return shape_error("{}: input {} {} has no batch{} axis", node.describe(), i, shape_to_string(v.shape),
                           is_scan ? " and sequence" : "");
      if ((*v.shape)[0].known()) batch = (*v.shape)[0];
      if (is_scan && (*v.shape)[1].known()) length = (*v.shape)[1];
      v.shape->erase(v.shape->begin(), v.shape->begin() + static_cast<std::ptrdiff_t>(drop));
    }
    inputs.push_back(std::move(v));
  }
  ASSIGN_OR_RETURN(auto body, infer_subgraph(node, "body", inputs));
  if (body.size() != ctx.num_outputs() || body.size() < n)
    return invalid_argument("{}: the body has {} outputs, the node {}", node.describe(), body.size(),
                            ctx.num_outputs());
  for (size_t k = 0; k < body.size(); ++k) {
    OptShape s;
    if (body[k].shape) {
      Shape full = k < n ? Shape{batch} : Shape{batch, length};
      full.insert(full.end(), body[k].shape->begin(), body[k].shape->end());
      s = full;
    }
    ctx.set_output(k, body[k].dtype, s);
  }
  return Status::Ok();
}

Status scan_rule(InferContext& ctx) {
  const Node& node = ctx.node();
  if (subgraph_opset(node) < 9) return scan8_rule(ctx);
  const size_t c = static_cast<size_t>(num_captures(node));
  const int64_t m = node.attr_int("num_scan_inputs", -1);
  if (m < 1 || ctx.num_inputs() < static_cast<size_t>(m) + c)
    return invalid_argument("{}: num_scan_inputs must be 1 to the number of inputs, not {}", node.describe(), m);
  const size_t scans = static_cast<size_t>(m), n = ctx.num_inputs() - scans - c;
  std::vector<int64_t> in_axes = node.attr_ints("scan_input_axes", std::vector<int64_t>(scans, 0));
  if (in_axes.size() != scans)
    return invalid_argument("{}: {} scan_input_axes for {} scan inputs", node.describe(), in_axes.size(), scans);
  std::vector<ValueInfo> inputs;
  Dim length;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ValueInfo v = type_of(ctx, i);
    if (i >= n && i < n + scans && v.shape) {
      ASSIGN_OR_RETURN(int64_t axis, normalize_axis(in_axes[i - n], static_cast<int64_t>(v.shape->size()), node));
      const Dim& len = (*v.shape)[static_cast<size_t>(axis)];
      if (len.known() && length.known() && len.value != length.value)
        return shape_error("{}: scan input {} has {} steps, the first {}", node.describe(), i - n, len.value,
                           length.value);
      if (len.known()) length = len;
      v.shape->erase(v.shape->begin() + axis);
    }
    inputs.push_back(std::move(v));
  }
  ASSIGN_OR_RETURN(auto body, infer_subgraph(node, "body", inputs));
  if (body.size() != ctx.num_outputs() || body.size() < n)
    return invalid_argument("{}: the body has {} outputs, the node {}", node.describe(), body.size(),
                            ctx.num_outputs());
  const size_t k_out = body.size() - n;
  std::vector<int64_t> out_axes = node.attr_ints("scan_output_axes", std::vector<int64_t>(k_out, 0));
  if (out_axes.size() != k_out)
    return invalid_argument("{}: {} scan_output_axes for {} scan outputs", node.describe(), out_axes.size(), k_out);
  for (size_t k = 0; k < n; ++k) ctx.set_output(k, body[k].dtype, merge(inputs[k].shape, body[k].shape));
  for (size_t k = 0; k < k_out; ++k) {
    const ValueInfo& each = body[n + k];
    OptShape s;
    if (each.shape) {
      ASSIGN_OR_RETURN(int64_t axis, normalize_axis(out_axes[k], static_cast<int64_t>(each.shape->size()) + 1, node));
      Shape stacked = *each.shape;
      stacked.insert(stacked.begin() + axis, length);
      s = stacked;
    }
    ctx.set_output(n + k, each.dtype, s);
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kOrtTrainDomain, "If", 1, 1000, if_rule, kRuleReadsInput(0) | kShapedByKernel | kReadsRunOptions);
ORT_REGISTER_OP(kOrtTrainDomain, "Loop", 1, 1000, loop_rule, kRuleReadsInput(0) | kShapedByKernel | kReadsRunOptions);
ORT_REGISTER_OP(kOrtTrainDomain, "Scan", 1, 1000, scan_rule, kShapedByKernel | kReadsRunOptions);

}  // namespace ort_train
