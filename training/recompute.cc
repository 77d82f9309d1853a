#include "training/recompute.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "graph/graph_index.h"
#include "graph/op_schema.h"
#include "graph/passes/op_traits.h"
#include "graph/passes/pass.h"
#include "graph/passes/pass_manager.h"
#include "graph/reachability.h"
#include "runtime/memory_estimate.h"
#include "training/step_graph.h"

namespace ort_train {

Result<RecomputeMode> parse_recompute_mode(const std::string& text) {
  if (text == "none" || text.empty()) return RecomputeMode::kNone;
  if (text == "cheap") return RecomputeMode::kCheap;
  if (text == "layers") return RecomputeMode::kLayers;
  if (text == "auto") return RecomputeMode::kAuto;
  return invalid_argument("--recompute '{}': expected none, cheap, layers or auto", text);
}

std::string layer_scope(const std::string& node_name) {
  // Scope components only: the last component is the node's own name ("MatMul_1").
  size_t start = 0;
  for (size_t slash = node_name.find('/'); slash != std::string::npos; slash = node_name.find('/', start)) {
    std::string comp = node_name.substr(start, slash - start);
    // "<name>.<index>" is a module-list entry; exporters mark a module called
    // again with "_<count>" ("dropout_1"), which is no layer.
    size_t sep = comp.find_last_of('.');
    bool indexed = sep != std::string::npos && sep > 0 && sep + 1 < comp.size() &&
                   std::isalpha(static_cast<unsigned char>(comp[0])) &&
                   std::all_of(comp.begin() + static_cast<std::ptrdiff_t>(sep) + 1, comp.end(),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (indexed) return node_name.substr(0, slash);
    start = slash + 1;
  }
  return "";
}

// The dynamo exporter names its nodes "node_MatMul_12" and keeps the module
// path in metadata instead: pkg.torch.onnx.name_scopes is a Python list of
// the enclosing modules' dotted paths, outermost first, then the FX node's
// own name ("['', 'model', 'model.bert.encoder.layer.0', 'linear_3']").
std::string dotted_layer_scope(const std::string& path) {
  // "<...>.<name>.<index>[.<...>]": the prefix through the first index that
  // follows a name (a module list's entry; "dropout_1" is no index).
  size_t start = 0;
  std::string prev;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string comp = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool index = !comp.empty() && std::all_of(comp.begin(), comp.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (index && !prev.empty() && std::isalpha(static_cast<unsigned char>(prev[0])))
      return path.substr(0, dot == std::string::npos ? path.size() : dot);
    if (dot == std::string::npos) break;
    prev = comp;
    start = dot + 1;
  }
  return "";
}

std::string layer_scope(const Node& node) {
  std::string by_name = layer_scope(node.name);
  if (!by_name.empty()) return by_name;
  for (const auto& [key, value] : node.metadata) {
    if (key != "pkg.torch.onnx.name_scopes") continue;
    // The quoted entries but the last (the FX node's own name, never a module).
    std::vector<std::string> scopes;
    for (size_t q = value.find('\''); q != std::string::npos; q = value.find('\'', q + 1)) {
      size_t end = value.find('\'', q + 1);
      if (end == std::string::npos) break;
      scopes.push_back(value.substr(q + 1, end - q - 1));
      q = end;
    }
    if (scopes.size() < 2) return "";
    scopes.pop_back();
    for (const std::string& s : scopes) {  // outermost first: the first indexed module is the layer
      std::string layer = dotted_layer_scope(s);
      if (!layer.empty()) return layer;
    }
  }
  return "";
}

namespace {

// Dropout and dropout_add_fusion's DropoutAdd: random, but their masks are kept.
bool is_dropout(const Node& n) {
  return (n.domain.empty() && n.op_type == "Dropout") || (n.domain == kOrtTrainDomain && n.op_type == "DropoutAdd");
}
// Random without a kept mask: a copy would draw other numbers.
bool is_random(const Node& n) { return is_random_op(n) && !is_dropout(n); }
bool is_mask(const Node& n, const std::string& v) { return is_dropout(n) && n.outputs.size() > 1 && n.outputs[1] == v; }

// Whether a copy computes what the node computed: a Dropout only through its
// kept mask; no other random op, and no op with state outputs
// (BatchNormalization's running statistics, which the trainer stores back).
bool copyable(const Node& n) {
  if (is_random(n) || !state_outputs(n).empty()) return false;
  if (is_dropout(n)) return n.outputs.size() > 1 && !n.outputs[1].empty();
  return true;
}

// The inputs a copy reads: a Dropout's ratio and training flag are constants
// or feeds, never recomputed.
size_t computed_inputs(const Node& n) {
  if (!is_dropout(n)) return n.inputs.size();
  return std::min<size_t>(n.inputs.size(), n.op_type == "Dropout" ? 1 : 2);
}

// Nodes computing again what `n` computed (every output but a Dropout's
// mask), under n's own value names; the caller renames. A Dropout is not
// drawn again: its forward mask is applied again (DropoutGrad's arithmetic,
// which is the forward's, x * mask * 1/(1 - ratio), with the ratio and
// training flag the forward read), and DropoutAdd's residual added after.
std::vector<Node> recomputation_of(const Node& n, int64_t opset) {
  if (!is_dropout(n)) return {n};
  bool fused = n.op_type == "DropoutAdd";
  Node d;
  d.name = n.name;
  d.op_type = "DropoutGrad";
  d.domain = kOrtTrainDomain;
  d.inputs = {n.inputs[0], n.outputs[1]};
  bool runtime_training = fused ? n.attr_int("runtime_training", 0) != 0 : opset < 12;
  if (!runtime_training) {
    size_t at = fused ? 2 : 1;  // ratio, training_mode
    d.inputs.push_back(n.inputs.size() > at ? n.inputs[at] : "");
    d.inputs.push_back(n.inputs.size() > at + 1 ? n.inputs[at + 1] : "");
  } else {
    d.attributes = {Attribute::make_int("runtime_training", 1), Attribute::make_float("ratio", n.attr_float("ratio", 0.5f))};
  }
  if (!fused) {
    d.outputs = {n.outputs[0]};
    return {d};
  }
  d.outputs = {n.outputs[0] + "_dropped"};
  Node add;
  add.name = n.name + "_residual";
  add.op_type = "Add";
  add.inputs = {d.outputs[0], n.inputs[1]};
  add.outputs = {n.outputs[0]};
  return {d, add};
}

// What both kinds of recompute read of a built training graph: which nodes
// are the forward (they reach the loss or a model output) and the graph's
// outputs (kept to the end anyway).
struct ForwardPart {
  std::vector<bool> forward;
  std::set<std::string> outputs;
  ForwardPart(const Graph& g, const std::vector<std::string>& eval_outputs) : forward(g.nodes.size(), false) {
    for (size_t i : nodes_reaching(g, eval_outputs)) forward[i] = true;
    for (const ValueInfo& o : g.outputs) outputs.insert(o.name);
  }
  // A backward node that reads an activation's values. A Shape reads only its
  // dims (shape_hoisting has put the backward's Shapes right after their
  // input's producer): it keeps reading the original, which is not kept for it.
  bool reads_data(const Graph& g, size_t node) const {
    return !forward[node] && !(g.nodes[node].op_type == "Shape" && g.nodes[node].domain.empty());
  }
};

// Places the copies (`inserted`: position -> nodes to put before it) and
// makes every backward node that reads values (`rewired`) read the copies'
// values instead of the originals (`redirect`).
void splice_copies(Graph& g, std::map<size_t, std::vector<Node>>& inserted,
                   const std::unordered_map<std::string, std::string>& redirect,
                   const std::function<bool(size_t)>& rewired) {
  const size_t count = g.nodes.size();
  std::vector<Node> nodes;
  nodes.reserve(count + inserted.size());
  for (size_t i = 0; i < count; ++i) {
    if (auto it = inserted.find(i); it != inserted.end())
      for (Node& c : it->second) nodes.push_back(std::move(c));
    Node& n = g.nodes[i];
    if (rewired(i))
      for (std::string& in : n.inputs)
        if (auto r = redirect.find(in); r != redirect.end()) in = r->second;
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
}

// The ops cheap to run again, per byte of output (elementwise, or a pass over
// the rows): ONNX Runtime recomputes GELU the same way (GeluRecompute).
bool cheap(const Node& n) {
  static const std::set<std::string> standard = {"Gelu", "Relu", "Sigmoid", "Tanh", "LayerNormalization"};
  static const std::set<std::string> fused = {"BiasGelu", "Silu", "LayerNormalization", "SimplifiedLayerNormalization"};
  return (n.domain.empty() && standard.count(n.op_type)) || (n.domain == kOrtTrainDomain && fused.count(n.op_type));
}

// Copies of cheap forward nodes whose first output the backward reads (the
// next GEMM's weight gradient reads a GELU's or a LayerNorm's output), placed
// just before its first backward reader, when every input of the node is
// kept for the backward anyway (the GELU's gradient reads its input, the
// LayerNorm's its input and statistics): the output's buffer is then free
// from its last forward reader on, and nothing lives longer. Views of the
// output that the backward reads are copied with it. Returns how many nodes
// were copied.
size_t recompute_cheap_ops(Model& model, const std::vector<std::string>& eval_outputs) {
  Graph& g = model.graph;
  const size_t count = g.nodes.size();
  const ForwardPart part(g, eval_outputs);
  const std::vector<bool>& forward = part.forward;
  GraphIndex index(g);
  auto backward_data_reader = [&](const GraphIndex::Use& u) { return part.reads_data(g, u.node); };
  std::map<size_t, std::vector<Node>> inserted;
  std::unordered_map<std::string, std::string> redirect;
  size_t copied = 0;
  for (size_t i = 0; i < count; ++i) {
    const Node& n = g.nodes[i];
    if (!forward[i] || !cheap(n) || n.outputs.empty() || n.outputs[0].empty()) continue;
    // The output and the forward views of it (GPT-2's Conv1D reads a Reshape of
    // the GELU's output), with the nodes that make them.
    std::vector<size_t> chain = {i};
    std::vector<std::string> aliases = {n.outputs[0]};
    for (size_t a = 0; a < aliases.size(); ++a)
      for (const GraphIndex::Use& u : index.consumers(aliases[a])) {
        const Node& v = g.nodes[u.node];
        if (forward[u.node] && u.slot == 0 && is_view_op(v) && v.outputs.size() == 1) {
          chain.push_back(u.node);
          aliases.push_back(v.outputs[0]);
        }
      }
    size_t at = count;
    bool output = false;
    for (const std::string& a : aliases) {
      output = output || part.outputs.count(a);
      for (const GraphIndex::Use& u : index.consumers(a))
        if (backward_data_reader(u)) at = std::min(at, u.node);
    }
    if (output || at == count) continue;
    // Every input of the cheap node is alive at `at` anyway: a parameter or
    // feed, or read by the backward from `at` on. (The views' other input is a
    // small shape tensor, whose life the copies may lengthen.)
    bool inputs_kept = true;
    for (const std::string& in : n.inputs) {
      if (in.empty() || g.is_initializer(in) || !index.producer(in)) continue;
      bool alive = false;
      for (const GraphIndex::Use& u : index.consumers(in)) alive = alive || (backward_data_reader(u) && u.node >= at);
      inputs_kept = inputs_kept && alive;
    }
    if (!inputs_kept) continue;
    std::unordered_map<std::string, std::string> renamed;
    for (size_t c : chain) {
      Node copy = g.nodes[c];
      copy.name = index.fresh_node_name(copy.name + "_recompute");
      for (std::string& in : copy.inputs)
        if (renamed.count(in)) in = renamed.at(in);
      for (std::string& o : copy.outputs) {
        if (o.empty()) continue;
        std::string fresh = index.fresh_value_name(o + "_recompute");
        if (const ValueInfo* v = g.value(o)) {
          ValueInfo info = *v;
          info.name = fresh;
          g.values[fresh] = std::move(info);
        }
        renamed[o] = fresh;
        o = fresh;
      }
      inserted[at].push_back(std::move(copy));
      ++copied;
    }
    for (const std::string& a : aliases) redirect[a] = renamed.at(a);
  }
  if (copied == 0) return 0;
  splice_copies(g, inserted, redirect, [&](size_t node) { return part.reads_data(g, node); });
  return copied;
}

// Copies of the chosen layers' nodes, placed and wired into `model`; returns
// how many nodes were copied.
size_t recompute_layers(Model& model, const std::vector<std::string>& eval_outputs,
                        const std::set<std::string>& layers) {
  Graph& g = model.graph;
  const size_t count = g.nodes.size();
  const ForwardPart part(g, eval_outputs);
  const std::vector<bool>& forward = part.forward;
  const std::set<std::string>& graph_outputs = part.outputs;
  std::vector<std::string> scope(count);
  for (size_t i = 0; i < count; ++i)
    if (forward[i]) scope[i] = layer_scope(g.nodes[i]);
  GraphIndex index(g);
  auto reads_data = [&](size_t node) { return part.reads_data(g, node); };
  std::map<size_t, std::vector<Node>> inserted;     // backward position -> copies placed before it
  std::unordered_map<std::string, std::string> redirect;  // activation -> its copy, for backward readers
  size_t copied = 0;
  std::set<std::string> names;  // of the copies: fresh in the graph, and among themselves
  for (const std::string& layer : layers) {
    auto in_layer = [&](const std::string& v) {
      auto p = index.producer(v);
      return p && forward[*p] && scope[*p] == layer;
    };
    // Kept from the forward regardless: graph outputs, what later forward
    // nodes read (the layer's output is the next layer's input), masks.
    auto kept = [&](const std::string& v) {
      if (graph_outputs.count(v)) return true;
      auto p = index.producer(v);
      if (!copyable(g.nodes[*p]) || is_mask(g.nodes[*p], v)) return true;
      for (const GraphIndex::Use& u : index.consumers(v))
        if (forward[u.node] && scope[u.node] != layer) return true;
      return false;
    };
    std::set<size_t> copies;
    std::vector<std::string> needed;  // the layer's activations the backward reads
    std::function<void(const std::string&)> copy_producer = [&](const std::string& v) {
      size_t p = *index.producer(v);
      if (!copies.insert(p).second) return;
      const Node& n = g.nodes[p];
      for (size_t k = 0; k < computed_inputs(n); ++k)
        if (!n.inputs[k].empty() && in_layer(n.inputs[k]) && !kept(n.inputs[k])) copy_producer(n.inputs[k]);
    };
    for (size_t i = 0; i < count; ++i) {
      if (!forward[i] || scope[i] != layer) continue;
      for (const std::string& o : g.nodes[i].outputs) {
        if (o.empty() || kept(o)) continue;
        bool read_by_backward = false;
        for (const GraphIndex::Use& u : index.consumers(o)) read_by_backward = read_by_backward || reads_data(u.node);
        if (!read_by_backward) continue;
        needed.push_back(o);
        copy_producer(o);
      }
    }
    if (needed.empty()) continue;
    // Before the first backward node reading any of them, and after every
    // forward value the copies read.
    size_t at = count, after = 0;
    for (const std::string& v : needed)
      for (const GraphIndex::Use& u : index.consumers(v))
        if (reads_data(u.node)) at = std::min(at, u.node);
    std::unordered_map<std::string, std::string> renamed;
    std::vector<Node> made;
    for (size_t p : copies) {  // ascending: the forward's order
      const Node& n = g.nodes[p];
      for (const std::string& in : n.inputs)
        if (!in.empty() && !renamed.count(in))
          if (auto q = index.producer(in)) after = std::max(after, *q + 1);
      for (Node& c : recomputation_of(n, model.opset(""))) {
        std::string base = c.name;
        c.name = index.fresh_node_name(base + "_recompute");
        for (int k = 2; !names.insert(c.name).second; ++k)
          c.name = index.fresh_node_name(base + "_recompute_" + std::to_string(k));
        for (std::string& in : c.inputs)
          if (renamed.count(in)) in = renamed.at(in);
        for (std::string& o : c.outputs) {
          if (o.empty()) continue;
          std::string fresh = index.fresh_value_name(o + "_recompute");
          // The value's own info; DropoutAdd's dropped X has X's.
          const ValueInfo* v = g.value(o) ? g.value(o) : g.value(n.inputs[0]);
          if (v) {
            ValueInfo info = *v;
            info.name = fresh;
            g.values[fresh] = std::move(info);
          }
          renamed[o] = fresh;
          o = fresh;
        }
        made.push_back(std::move(c));
      }
    }
    if (after > at) continue;  // cannot be placed (never seen in a built graph): keep the activations
    for (const std::string& v : needed) redirect[v] = renamed.at(v);
    copied += made.size();
    auto& slot = inserted[at];
    slot.insert(slot.end(), std::make_move_iterator(made.begin()), std::make_move_iterator(made.end()));
  }
  if (copied == 0) return 0;
  splice_copies(g, inserted, redirect, reads_data);
  return copied;
}

}  // namespace

// The plan of what a step runs (the step graph) of `model`, a version of tg.model.
static MemoryEstimate plan_step(const Model& model, const TrainingGraph& tg, const std::set<std::string>& bound) {
  auto step = build_step_graph(tg, model);
  return estimate_memory(step.ok() ? step->model : model, bound);
}

namespace {

// The rewrite of `model` (tg's model, or a version of it) for `mode`.
RecomputeReport recompute(Model& model, const TrainingGraph& tg, RecomputeMode mode, uint64_t budget_bytes) {
  RecomputeReport report;
  const Graph& g = model.graph;
  std::vector<size_t> forward = nodes_reaching(g, tg.eval_outputs);
  for (size_t i : forward) {
    std::string s = layer_scope(g.nodes[i]);
    if (!s.empty() && std::find(report.layers.begin(), report.layers.end(), s) == report.layers.end())
      report.layers.push_back(s);
  }
  const std::set<std::string> bound = gradient_outputs(tg);
  MemoryEstimate before = plan_step(model, tg, bound);
  report.peak_before = report.peak_after = before.peak_activation_bytes;
  report.complete = before.complete;
  if (mode == RecomputeMode::kNone) return report;

  uint64_t weights = before.initializer_bytes;
  auto fits = [&](const MemoryEstimate& e) { return weights + e.peak_activation_bytes <= budget_bytes; };
  // auto: nothing to judge against, or nothing to do. An incomplete estimate
  // (a size that depends on the data, as computation_reduction's labelled
  // rows) is a lower bound: recompute when even it does not fit.
  if (mode == RecomputeMode::kAuto && (budget_bytes == 0 || fits(before))) return report;
  // The cost model: cheap ops first (an elementwise pass or a row pass per
  // byte saved), then whole layers (their GEMMs again) from the first on.
  Model m = model;  // initializers share storage: a cheap copy
  if (mode == RecomputeMode::kCheap || mode == RecomputeMode::kAuto)
    report.cheap_nodes = recompute_cheap_ops(m, tg.eval_outputs);
  MemoryEstimate after = plan_step(m, tg, bound);
  const size_t all = report.layers.size();
  size_t k = 0, copied = 0;
  if (mode == RecomputeMode::kLayers) k = all;
  if (mode == RecomputeMode::kAuto && !fits(after)) k = 1;
  const Model cheap_done = k > 0 && all > 0 ? m : Model{};
  for (; k > 0 && all > 0; ++k) {
    m = cheap_done;
    std::set<std::string> chosen(report.layers.begin(), report.layers.begin() + static_cast<std::ptrdiff_t>(k));
    copied = recompute_layers(m, tg.eval_outputs, chosen);
    after = plan_step(m, tg, bound);
    if (mode != RecomputeMode::kAuto || fits(after) || k == all) break;
  }
  if (mode == RecomputeMode::kAuto) report.fits = fits(after);
  report.recomputed.assign(report.layers.begin(), report.layers.begin() + static_cast<std::ptrdiff_t>(std::min(k, all)));
  report.copied_nodes = copied;
  report.peak_after = after.peak_activation_bytes;
  report.complete = report.complete && after.complete;
  model = std::move(m);
  return report;
}

class Recompute : public Pass {
 public:
  std::string name() const override { return "recompute"; }
  PassOrder order() const override { return {.phases = kRecomputePhase, .required = true}; }
  Result<bool> apply(Model& model, const PassContext& ctx) override {
    RecomputePlan* plan = ctx.recompute;
    if (!plan || !plan->tg) return false;
    const size_t nodes = model.graph.nodes.size();
    plan->report = recompute(model, *plan->tg, plan->mode, plan->budget_bytes);
    ctx.count(static_cast<int64_t>(model.graph.nodes.size() - nodes));
    for (const std::string& layer : plan->report.recomputed) ctx.note(layer);
    return model.graph.nodes.size() != nodes;
  }
};

ORT_REGISTER_PASS(Recompute);

}  // namespace

Result<RecomputeReport> apply_recompute(TrainingGraph& tg, RecomputeMode mode, uint64_t budget_bytes,
                                        const std::set<std::string>& disabled) {
  if (disabled.count("recompute"))
    return invalid_argument("--recompute: the recompute pass is disabled (--disable-pass), so nothing can be "
                            "recomputed");
  RecomputePlan plan{mode, budget_bytes, &tg, {}};
  PassManagerOptions options;
  options.passes = {};
  options.phase = kRecomputePhase;
  options.max_rounds = 1;  // not idempotent: a second run would copy the copies' layers again
  options.shapes_bound = true;
  options.recompute = &plan;
  const std::set<std::string> pinned(tg.selection.trainable.begin(), tg.selection.trainable.end());
  RETURN_IF_ERROR(run_passes(tg.model, pinned, options).status());
  return plan.report;
}

}  // namespace ort_train
