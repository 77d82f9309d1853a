#include "graph/passes/pass_manager.h"

#include <fmt/format.h>

#include <chrono>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "graph/graph_index.h"
#include "graph/shape_inference.h"

namespace ort_train {

std::vector<std::string> default_pass_names() {
  // Fusions come after folding and merging, which turn exporters' Constant
  // nodes into initializers and merge the duplicate subexpressions they emit.
  // bias_gelu_fusion takes its bias before matmul_add_fusion would;
  // attention_fusion reads the scale, transposes and mask the fusions before it folded.
  return {"constant_folding",    "shape_folding",         "dead_code_elimination", "common_subexpression_elimination",
          "redundant_node_elimination",
          "layer_norm_fusion",   "rms_norm_fusion",       "gelu_fusion",
          "bias_gelu_fusion",    "silu_fusion",           "matmul_scale_fusion",
          "matmul_transpose_fusion", "matmul_add_fusion", "bias_softmax_fusion",
          "attention_fusion",    "dropout_add_fusion",  "computation_reduction",  "shape_hoisting",
          "memory_aware_order"};
}

std::string PassReport::summary() const {
  std::string out;
  for (const auto& [name, s] : passes) out += fmt::format("{}: {} runs, {} changed\n", name, s.runs, s.changed);
  out += fmt::format("{} round(s), {}", rounds, fixed_point ? "fixed point reached" : "stopped at the round cap");
  return out;
}

void sync_value_infos(Graph& g) {
  // Views of names the graph keeps (initializers, inputs, outputs, nodes),
  // none of which is erased below.
  std::unordered_set<std::string_view> present;
  size_t names = g.initializers.size() + g.inputs.size() + g.outputs.size();
  for (const Node& n : g.nodes) names += n.inputs.size() + n.outputs.size();
  present.reserve(names);
  for (const auto& [name, t] : g.initializers) present.insert(name);
  for (const ValueInfo& v : g.inputs) present.insert(v.name);
  for (const ValueInfo& v : g.outputs) present.insert(v.name);
  for (const Node& n : g.nodes) {
    present.insert(n.inputs.begin(), n.inputs.end());
    present.insert(n.outputs.begin(), n.outputs.end());
  }
  std::erase_if(g.values, [&](const auto& entry) { return !present.count(entry.first); });
  std::erase_if(g.declared_value_infos, [&](const std::string& n) { return !present.count(n); });
  for (const auto& [name, t] : g.initializers) {
    ValueInfo& info = g.values[name];
    info.name = name;
    info.dtype = t.dtype();
    info.shape = shape_from_dims(t.dims());
  }
}

namespace {

bool lacks_value_infos(const Graph& g) {
  for (const Node& n : g.nodes)
    for (const std::string& o : n.outputs) {
      const ValueInfo* v = o.empty() ? nullptr : g.value(o);
      if (!o.empty() && (!v || !v->shape)) return true;
    }
  return false;
}

Status check_names(const PassManagerOptions& options) {
  const std::vector<std::string> known = PassRegistry::instance().names();
  std::vector<std::string> unknown;
  auto check = [&](const std::string& name) {
    if (std::find(known.begin(), known.end(), name) == known.end() &&
        std::find(unknown.begin(), unknown.end(), name) == unknown.end())
      unknown.push_back(name);
  };
  for (const std::string& n : options.passes) check(n);
  for (const std::string& n : options.disabled) check(n);
  if (unknown.empty()) return Status::Ok();
  return invalid_argument("unknown pass(es): {}; known passes: {}", fmt::join(unknown, ", "), fmt::join(known, ", "));
}

// Every registered pass's declared order, by name.
std::map<std::string, PassOrder> pass_orders() {
  std::map<std::string, PassOrder> orders;
  for (const std::string& name : PassRegistry::instance().names())
    orders[name] = PassRegistry::instance().create(name)->order();
  return orders;
}

// The phases that run in a build with `options`: the 16-bit phase only with a
// 16-bit precision, the adapter and recompute phases only when asked for.
uint32_t phases_that_run(const PassManagerOptions& options) {
  return kForwardPhase | kBackwardPhase | kStepPhase | (options.precision != DType::kFloat ? kPrecisionPhase : 0u) |
         (options.lora ? kAdapterPhase : 0u) | (options.recompute ? kRecomputePhase : 0u);
}

// The required passes of `phase` (not disabled), each after those its `after` names.
std::vector<std::string> required_passes(const std::map<std::string, PassOrder>& orders,
                                         const PassManagerOptions& options, PassPhase phase) {
  std::vector<std::string> pending;
  for (const auto& [name, o] : orders)
    if (o.required && (o.phases & phase) && !options.disabled.count(name)) pending.push_back(name);
  std::vector<std::string> ordered;
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](const std::string& name) {
      for (const std::string& a : orders.at(name).after)
        if (std::find(pending.begin(), pending.end(), a) != pending.end()) return false;
      return true;
    });
    if (ready == pending.end()) ready = pending.begin();  // a cycle among required passes: name order
    ordered.push_back(*ready);
    pending.erase(ready);
  }
  return ordered;
}

}  // namespace

Result<std::vector<std::string>> plan_passes(const PassManagerOptions& options, std::vector<std::string>* replaced) {
  RETURN_IF_ERROR(check_names(options));
  const std::map<std::string, PassOrder> orders = pass_orders();
  std::vector<std::string> plan = required_passes(orders, options, options.phase);
  for (const std::string& name : options.passes)
    if ((orders.at(name).phases & options.phase) && !options.disabled.count(name) &&
        std::find(plan.begin(), plan.end(), name) == plan.end())
      plan.push_back(name);
  // Replaced: by a listed or required pass that runs in some phase of this build.
  std::vector<std::string> candidates = options.passes;
  for (const auto& [name, o] : orders)
    if (o.required) candidates.push_back(name);
  for (const std::string& name : candidates) {
    const PassOrder& o = orders.at(name);
    if (options.disabled.count(name) || !(o.phases & phases_that_run(options))) continue;
    for (const std::string& gone : o.replaces) {
      auto it = std::find(plan.begin(), plan.end(), gone);
      if (it == plan.end()) continue;
      plan.erase(it);
      if (replaced) replaced->push_back(fmt::format("{} (replaced by {})", gone, name));
    }
  }
  for (size_t i = 0; i < plan.size(); ++i)
    for (const std::string& first : orders.at(plan[i]).after) {
      auto at = std::find(plan.begin(), plan.end(), first);
      if (at != plan.end() && at > plan.begin() + static_cast<std::ptrdiff_t>(i))
        return invalid_argument("graph passes: {} must run before {}, which declares that it follows it; the "
                                "order given puts it after",
                                first, plan[i]);
    }
  return plan;
}

Result<PassReport> run_passes(Model& model, const std::set<std::string>& pinned, const PassManagerOptions& options) {
  PassReport report;
  ASSIGN_OR_RETURN(std::vector<std::string> planned, plan_passes(options, &report.replaced));
  if (options.max_rounds < 1) return invalid_argument("max_rounds must be at least 1, got {}", options.max_rounds);
  RETURN_IF_ERROR(verify_graph(model.graph).with_context("before the graph passes"));
  // Fusions read ranks and element types from value infos, which a model read
  // from a file has only where its exporter wrote them (a training graph has
  // them all: its builder inferred them). Where some are missing, infer them
  // for the passes and put the model's own back afterwards, since inference
  // here knows none of the description's dims and later inference keeps what
  // it finds. Inference that fails (an op without a shape rule, say) is
  // reported by the checks that own it; the passes then fuse what they can prove.
  std::optional<decltype(model.graph.values)> own_values;
  if (lacks_value_infos(model.graph)) {
    own_values = model.graph.values;
    if (Status inferred = infer_shapes(model); !inferred.ok())
      spdlog::debug("graph passes: shape inference before them: {}", inferred.message());
  }

  std::vector<std::unique_ptr<Pass>> passes;
  for (const std::string& name : planned) {
    passes.push_back(PassRegistry::instance().create(name));
    report.passes[name];  // listed even if it never changes anything
  }

  PassContext ctx;
  ctx.pinned = pinned;
  ctx.shapes_bound = options.shapes_bound;
  ctx.precision = options.precision;
  ctx.autocast_to_come = options.precision != DType::kFloat && options.phase == kForwardPhase;
  ctx.lora = options.lora;
  ctx.recompute = options.recompute;
  // A pass that settles in one run (constant folding and CSE walk in
  // topological order, DCE in reverse) runs again only when another one
  // changed the graph since its last run.
  std::vector<std::string> changers;  // passes that changed the graph, for the error below
  std::vector<int64_t> seen_version(passes.size(), -1);
  int64_t version = 0;  // bumped by every change
  while (report.rounds < options.max_rounds && !report.fixed_point) {
    ++report.rounds;
    bool changed = false;
    for (size_t p = 0; p < passes.size(); ++p) {
      const auto& pass = passes[p];
      if (pass->settles_in_one_run() && seen_version[p] == version) continue;
      ctx.changed = 0;
      ctx.matched.clear();
      auto started = std::chrono::steady_clock::now();
      auto result = pass->apply(model, ctx);
      if (!result.ok()) return result.status().with_context("graph pass " + pass->name());
#ifndef NDEBUG
      // Debug builds check after every pass, to name the one that broke the graph.
      Status valid = verify_graph(model.graph);
      if (!valid.ok())
        return make_error(ErrorCode::kInternal, "graph pass {} left an invalid graph: {}", pass->name(),
                          valid.message());
#endif
      PassStats& stats = report.passes[pass->name()];
      ++stats.runs;
      stats.changed += ctx.changed;
      stats.matched.insert(stats.matched.end(), ctx.matched.begin(), ctx.matched.end());
      if (*result) {
        ctx.drop_index();
        ++version;
        if (std::find(changers.begin(), changers.end(), pass->name()) == changers.end()) changers.push_back(pass->name());
      }
      seen_version[p] = version;
      changed = changed || *result;
      spdlog::debug("graph pass {} (round {}): {} changed, {:.2f} ms", pass->name(), report.rounds, ctx.changed,
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    }
    report.fixed_point = !changed;
  }
  // Release builds check once, here, naming every pass that changed the graph.
  Status valid = verify_graph(model.graph);
  if (!valid.ok())
    return make_error(ErrorCode::kInternal, "the graph passes left an invalid graph (changed by {}): {}",
                      fmt::join(changers, ", "), valid.message());
  if (own_values) model.graph.values = std::move(*own_values);
  sync_value_infos(model.graph);
  return report;
}

}  // namespace ort_train
