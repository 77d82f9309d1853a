#include "autodiff/gradient_builder.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

bool is_float(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16;
}

// Which values depend differentiably on a trainable initializer, and which nodes
// lie on a path from one to the loss. Nodes without a rule are assumed to pass
// gradients through, so that every missing rule on a path is found at once.
struct PathAnalysis {
  std::set<std::string> reached;  // values that depend on a trainable initializer
  std::set<std::string> needed;   // values whose gradient the loss needs (loss included)
  std::vector<bool> on_path;      // per node
  std::vector<std::string> missing_rules;
};

PathAnalysis analyze(const Model& model, const std::string& loss, const std::vector<std::string>& trainable) {
  const Graph& g = model.graph;
  auto dtype_of = [&](const std::string& v) {
    const ValueInfo* info = g.value(v);
    return info ? info->dtype : DType::kUndefined;
  };
  PathAnalysis p;
  p.reached.insert(trainable.begin(), trainable.end());
  const auto& registry = GradientRegistry::instance();
  auto flows = [&](const Node& n, size_t i) {
    const GradientRule* r = registry.find(n.domain, n.op_type);
    return r == nullptr || r->differentiable_input(i);
  };
  for (const Node& n : g.nodes) {
    bool any = false;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      any = any || (!n.inputs[i].empty() && p.reached.count(n.inputs[i]) && flows(n, i));
    if (!any) continue;
    const GradientRule* r = registry.find(n.domain, n.op_type);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty() && is_float(dtype_of(n.outputs[k])) && (!r || r->differentiable_output(k)))
        p.reached.insert(n.outputs[k]);
  }
  p.on_path.assign(g.nodes.size(), false);
  if (p.reached.count(loss)) p.needed.insert(loss);
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    bool out_needed = false;
    for (const std::string& o : n.outputs) out_needed = out_needed || (!o.empty() && p.needed.count(o));
    if (!out_needed) continue;
    bool any = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& in = n.inputs[i];
      if (in.empty() || !p.reached.count(in) || !is_float(dtype_of(in)) || !flows(n, i)) continue;
      p.needed.insert(in);
      any = true;
    }
    p.on_path[k] = any;
    if (any && !registry.find(n.domain, n.op_type))
      p.missing_rules.push_back(fmt::format("{} ({}{})", n.name, n.domain.empty() ? "" : n.domain + "::", n.op_type));
  }
  std::reverse(p.missing_rules.begin(), p.missing_rules.end());
  return p;
}

// Sums the contributions to one value's gradient.
Result<std::string> accumulate(GraphBuilder& b, const std::vector<std::string>& parts, const std::string& value) {
  if (parts.empty()) return std::string();
  if (parts.size() == 1) return parts[0];
  return b.add1("Sum", parts, {}, "", value + "_grad_sum");
}

}  // namespace

std::vector<std::string> nodes_without_gradient(const Model& model, const std::string& loss,
                                                const std::vector<std::string>& trainable) {
  return analyze(model, loss, trainable).missing_rules;
}

Result<GradientGraph> build_gradients(GraphBuilder& b, const std::string& loss,
                                      const std::vector<std::string>& trainable, const std::string& seed,
                                      const std::map<std::string, int64_t>& padding_rows) {
  Model& model = b.model();
  GradientGraph out;
  out.loss = loss;
  const size_t forward_nodes = model.graph.nodes.size();  // the walk starts below what it appends
  if (!model.graph.value(loss)) return invalid_argument("loss '{}' is not a value of the model", loss);
  DType loss_type = b.dtype(loss);
  if (!is_float(loss_type))
    return invalid_argument("loss '{}' has dtype {}; a floating-point loss is needed", loss, dtype_name(loss_type));
  if (const OptShape& s = b.shape(loss)) {
    for (const Dim& d : *s)
      if (d.known() && d.value != 1)
        return shape_error("loss '{}' has shape {}; a scalar (one element) is needed", loss, shape_to_string(s));
  }
  for (const std::string& w : trainable) {
    bool is_input = std::any_of(model.graph.inputs.begin(), model.graph.inputs.end(),
                                [&](const ValueInfo& v) { return v.name == w; });
    if (!model.graph.is_initializer(w) && !is_input)
      return invalid_argument("trainable '{}' is neither an initializer nor a graph input", w);
    if (!is_float(b.dtype(w)))
      return invalid_argument("trainable '{}' has dtype {}; only floating-point tensors train", w,
                              dtype_name(b.dtype(w)));
  }

  PathAnalysis p = analyze(model, loss, trainable);
  if (!p.missing_rules.empty()) {
    std::string msg = fmt::format("{} node(s) between the trainable initializers and the loss have no gradient rule:",
                                  p.missing_rules.size());
    for (const auto& m : p.missing_rules) msg += "\n  " + m;
    return unsupported("{}", msg);
  }

  std::map<std::string, std::vector<std::string>> parts;  // value -> gradient contributions
  if (p.needed.count(loss)) {
    if (!seed.empty() && b.dtype(seed) != loss_type)
      return invalid_argument("the backward's seed '{}' is {}, the loss {}", seed, dtype_name(b.dtype(seed)),
                              dtype_name(loss_type));
    std::string start = seed.empty() ? b.scalar(1.0, loss_type) : seed;
    ASSIGN_OR_RETURN(std::string shaped, b.reshape_like(start, loss));
    parts[loss].push_back(shaped);
  }
  const auto& registry = GradientRegistry::instance();
  // Each gradient is emitted right after its last contribution: once the
  // reverse walk has passed the first forward node (in forward order) that
  // reads the weight, nothing more can add to it. So the gradient is final
  // part-way through the backward pass, where a communicator can take it,
  // rather than at the end of the graph.
  std::map<size_t, std::vector<std::string>> finalize_at;  // forward node index -> weights
  for (const std::string& w : trainable) {
    for (size_t k = 0; k < forward_nodes; ++k) {
      const Node& n = model.graph.nodes[k];
      if (!p.on_path[k]) continue;
      const GradientRule* rule = registry.find(n.domain, n.op_type);
      bool reads = false;
      for (size_t i = 0; i < n.inputs.size(); ++i) reads = reads || (n.inputs[i] == w && rule->differentiable_input(i));
      if (reads) {
        finalize_at[k].push_back(w);
        break;
      }
    }
  }
  std::map<std::string, ValueInfo> grad_info;
  auto finalize = [&](const std::string& w) -> Status {
    auto it = parts.find(w);
    if (it == parts.end() || it->second.empty()) return Status::Ok();  // unreached: reported below
    std::string name = b.fresh_name(w + "_grad");
    if (it->second.size() == 1) {
      RETURN_IF_ERROR(b.add_named("Identity", {it->second[0]}, {name}));
    } else {
      RETURN_IF_ERROR(b.add_named("Sum", it->second, {name}));
    }
    b.refine_shape(name, b.shape(w));
    out.gradient[w] = name;
    grad_info[w] = *model.graph.value(name);
    parts.erase(it);
    return Status::Ok();
  };
  auto backprop = [&](size_t k) -> Status {
    if (!p.on_path[k]) return Status::Ok();
    const Node fwd = model.graph.nodes[k];
    std::vector<std::string> go;
    bool any_go = false;
    for (const std::string& o : fwd.outputs) {
      std::string g;
      if (!o.empty() && parts.count(o)) {
        ASSIGN_OR_RETURN(g, accumulate(b, parts[o], o));
        parts.erase(o);
      }
      any_go = any_go || !g.empty();
      go.push_back(g);
    }
    if (!any_go) return Status::Ok();
    std::vector<bool> wanted(fwd.inputs.size(), false);
    const GradientRule* rule = registry.find(fwd.domain, fwd.op_type);
    for (size_t i = 0; i < fwd.inputs.size(); ++i) {
      const std::string& in = fwd.inputs[i];
      wanted[i] = !in.empty() && p.needed.count(in) && rule->differentiable_input(i);
    }
    GradientContext ctx(b, k, go, wanted, &padding_rows);
    Status st = rule->build(ctx);
    if (!st.ok())
      return st.message().find(fwd.name) == std::string::npos ? st.with_context("gradient of " + fwd.describe()) : st;
    for (size_t i = 0; i < fwd.inputs.size(); ++i) {
      if (!wanted[i]) continue;
      std::string gi = ctx.input_grads()[i];
      const std::string& in = fwd.inputs[i];
      if (gi.empty())
        return make_error(ErrorCode::kInternal, "gradient rule of {} produced no gradient for input {} ('{}')",
                          fwd.describe(), i, in);
      if (b.dtype(gi) != b.dtype(in))
        return make_error(ErrorCode::kInternal, "gradient rule of {}: gradient of input {} has dtype {}, input has {}",
                          fwd.describe(), i, dtype_name(b.dtype(gi)), dtype_name(b.dtype(in)));
      ASSIGN_OR_RETURN(gi, b.sum_to_shape_of(gi, in));
      // Statically known dims must agree; symbolic ones are checked when the graph runs.
      const OptShape& gs = b.shape(gi);
      const OptShape& is = b.shape(in);
      if (gs && is) {
        bool ok = gs->size() == is->size();
        for (size_t d = 0; ok && d < gs->size(); ++d)
          ok = !((*gs)[d].known() && (*is)[d].known() && (*gs)[d].value != (*is)[d].value);
        if (!ok)
          return make_error(ErrorCode::kInternal, "gradient rule of {}: gradient of input {} has shape {}, input has {}",
                            fwd.describe(), i, shape_to_string(gs), shape_to_string(is));
      }
      parts[in].push_back(gi);
    }
    return Status::Ok();
  };
  for (size_t k = forward_nodes; k-- > 0;) {
    RETURN_IF_ERROR(backprop(k));
    for (const std::string& w : finalize_at[k]) RETURN_IF_ERROR(finalize(w));
  }

  std::vector<ValueInfo> grad_outputs;
  for (const std::string& w : trainable) {
    if (!grad_info.count(w)) RETURN_IF_ERROR(finalize(w));  // safety net: contributions from a node finalize_at missed
    auto it = grad_info.find(w);
    if (it == grad_info.end()) {
      out.unreached.push_back(w);
      continue;
    }
    out.trainable.push_back(w);
    grad_outputs.push_back(it->second);
  }
  for (auto& v : grad_outputs) model.graph.outputs.push_back(v);
  return out;
}

}  // namespace ort_train
