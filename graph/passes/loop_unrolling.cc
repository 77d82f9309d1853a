// loop_unrolling: a Loop whose trip count is fixed at plan time becomes its
// body written out once per trip, so the backward differentiates it like any
// other graph (Loop has no gradient rule of its own). Not a default pass: the
// training graph runs it before the others (autodiff/training_graph.cc), so
// `run` keeps its Loops and a training step needs no Loop kernel.
//
// Fixed means: M is a constant, and either no condition is given (the body's
// is then ignored) or the condition is a constant true that the body passes
// through unchanged (PyTorch's `for i in range(n)` exports so). Trip t binds
// the body's iteration number to the constant t, its loop-carried inputs to
// trip t-1's outputs and its captures to the node's; its scan outputs are
// unsqueezed and concatenated. The nodes written out are bounded for the
// whole graph, not Loop by Loop: once kMaxUnrolledNodes are spent (over every
// run of the pass in one optimization, so the copies of a nested Loop that the
// outer one wrote out draw on the same budget), the rest are left as Loops
// (their gradient is then refused by name). A bound per Loop let two nested
// 6666-trip Loops write out 44 million nodes.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/control_flow.h"
#include "graph/op_schema.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

constexpr int64_t kMaxUnrolledNodes = 20000;

class Namer {
 public:
  explicit Namer(const Graph& g) {
    for (const auto& [name, t] : g.initializers) used_.insert(name);
    for (const ValueInfo& v : g.inputs) used_.insert(v.name);
    for (const Node& n : g.nodes) {
      used_.insert(n.name);
      for (const std::string& o : n.outputs) used_.insert(o);
    }
  }
  std::string fresh(const std::string& hint) {
    std::string name = hint;
    for (int k = 1; !used_.insert(name).second; ++k) name = hint + "_" + std::to_string(k);
    return name;
  }

 private:
  std::unordered_set<std::string> used_;
};

// The constant value of `name`: an initializer or a Constant node's `value`.
const Tensor* constant_value(const Graph& g, const std::string& name) {
  auto it = g.initializers.find(name);
  if (it != g.initializers.end()) return &it->second;
  for (const Node& n : g.nodes)
    if (n.op_type == "Constant" && n.domain.empty() && !n.outputs.empty() && n.outputs[0] == name) {
      const Attribute* a = n.attr("value");
      return a && a->t.defined() ? &a->t : nullptr;
    }
  return nullptr;
}

// The body's condition output is always true: its condition input handed
// back, a constant true, or a captured outer constant true (PyTorch's
// scripted `for` loops), directly or through Identity.
bool condition_stays_true(const Graph& g, const Node& loop, const Graph& body) {
  if (body.inputs.size() < 2 || body.outputs.empty()) return false;
  const size_t c = static_cast<size_t>(num_captures(loop));
  const size_t first_capture = body.inputs.size() - c;
  auto is_true = [](const Tensor* t) {
    return t && t->dtype() == DType::kBool && t->numel() == 1 && t->data<bool>()[0];
  };
  std::string v = body.outputs[0].name;
  for (int hops = 0; hops < 8; ++hops) {
    if (v == body.inputs[1].name) return true;
    for (size_t i = first_capture; i < body.inputs.size(); ++i)
      if (v == body.inputs[i].name) return is_true(constant_value(g, loop.inputs[i]));  // body input i is node input i
    if (is_true(constant_value(body, v))) return true;
    const Node* producer = nullptr;
    for (const Node& n : body.nodes)
      if (!n.outputs.empty() && n.outputs[0] == v) producer = &n;
    if (!producer || producer->op_type != "Identity" || producer->inputs.empty()) return false;
    v = producer->inputs[0];
  }
  return false;
}

std::optional<int64_t> fixed_trips(const Graph& g, const Node& loop, const Graph& body) {
  // The explicit form, consistent (a file may hold com.ort_train Loop itself):
  // one body input per node input, the condition, each carried value and each scan output.
  const size_t c = static_cast<size_t>(num_captures(loop));
  if (loop.inputs.size() < 2 + c || body.inputs.size() != loop.inputs.size() ||
      body.outputs.size() < 1 + (loop.inputs.size() - 2 - c) || loop.outputs.size() + 1 != body.outputs.size())
    return std::nullopt;
  if (!loop.has_input(0)) return std::nullopt;
  const Tensor* m = constant_value(g, loop.inputs[0]);
  if (!m || m->dtype() != DType::kInt64 || m->numel() != 1) return std::nullopt;
  if (loop.has_input(1)) {
    const Tensor* c = constant_value(g, loop.inputs[1]);
    if (!c || c->dtype() != DType::kBool || c->numel() != 1 || !c->data<bool>()[0]) return std::nullopt;
    if (!condition_stays_true(g, loop, body)) return std::nullopt;
  }
  return m->data<int64_t>()[0];
}

class LoopUnrolling : public Pass {
 public:
  std::string name() const override { return "loop_unrolling"; }
  // Before autodiff, which then differentiates the written-out trips as plain graph.
  PassOrder order() const override { return {.phases = kForwardPhase, .required = true}; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    Namer namer(g);
    bool changed = false;
    std::vector<Node> out;
    for (Node& n : g.nodes) {
      std::shared_ptr<const Graph> body = n.op_type == "Loop" && is_control_flow(n) ? subgraph(n, "body") : nullptr;
      std::optional<int64_t> trips = body ? fixed_trips(g, n, *body) : std::nullopt;
      // A Loop longer than the kernel would run stays a Loop, and its kernel
      // refuses it; the bound comes before the product, which a file's trip
      // count could overflow.
      const int64_t body_nodes = body ? std::max<int64_t>(static_cast<int64_t>(body->nodes.size()), 1) : 1;
      if (!trips || *trips < 1 || *trips > max_loop_trips() || *trips > budget_ / body_nodes) {
        out.push_back(std::move(n));
        continue;
      }
      budget_ -= *trips * body_nodes;
      unroll(model, n, *body, *trips, namer, out);
      ctx.count(1);
      ctx.note(fmt::format("Loop at {}: {} trips of {} nodes", n.name, *trips, body->nodes.size()));
      changed = true;
    }
    g.nodes = std::move(out);
    return changed;
  }

 private:
  int64_t budget_ = kMaxUnrolledNodes;  // nodes this pass may still write out (one instance per optimization)
  static void unroll(Model& model, const Node& loop, const Graph& body, int64_t trips, Namer& namer,
                     std::vector<Node>& out) {
    Graph& g = model.graph;
    const size_t c = static_cast<size_t>(num_captures(loop));
    const size_t n = loop.inputs.size() - 2 - c;
    const size_t scans = body.outputs.size() - 1 - n;
    std::vector<std::string> carried(loop.inputs.begin() + 2, loop.inputs.begin() + 2 + static_cast<long>(n));
    std::vector<std::vector<std::string>> parts(scans);
    const std::string truth = namer.fresh(loop.name + "/cond");
    Tensor t = Tensor::host(DType::kBool, {});
    t.data<bool>()[0] = true;
    g.initializers[truth] = t;
    g.initializer_order.push_back(truth);
    std::string axes;
    if (model.opset("") >= 13) {
      axes = namer.fresh(loop.name + "/axes");
      g.initializers[axes] = Tensor::from_vector<int64_t>({1}, {0});
      g.initializer_order.push_back(axes);
    }
    for (int64_t trip = 0; trip < trips; ++trip) {
      const std::string prefix = loop.name + "/" + std::to_string(trip) + "/";
      std::unordered_map<std::string, std::string> bound;
      const std::string iter = namer.fresh(prefix + "iter");
      g.initializers[iter] = Tensor::from_vector<int64_t>({}, {trip});
      g.initializer_order.push_back(iter);
      bound[body.inputs[0].name] = iter;
      bound[body.inputs[1].name] = truth;
      for (size_t i = 0; i < n; ++i) bound[body.inputs[2 + i].name] = carried[i];
      for (size_t i = 0; i < c; ++i) bound[body.inputs[2 + n + i].name] = loop.inputs[2 + n + i];
      for (const auto& [name, value] : body.initializers) {
        std::string fresh = namer.fresh(prefix + name);
        g.initializers[fresh] = value;
        g.initializer_order.push_back(fresh);
        bound[name] = fresh;
      }
      auto read = [&](const std::string& v) {
        auto it = bound.find(v);
        return v.empty() || it == bound.end() ? v : it->second;
      };
      for (const Node& b : body.nodes) {
        Node copy = b;
        copy.name = namer.fresh(prefix + b.name);
        for (std::string& in : copy.inputs) in = read(in);
        for (std::string& o : copy.outputs)
          if (!o.empty()) o = bound[o] = namer.fresh(prefix + o);
        // A nested If's branches, once per trip: each copy's names its own.
        for (Attribute& a : copy.attributes)
          if (a.g) a.g = with_prefixed_names(*a.g, copy.name + "/");
        out.push_back(std::move(copy));
      }
      for (size_t i = 0; i < n; ++i) carried[i] = read(body.outputs[1 + i].name);
      for (size_t k = 0; k < scans; ++k) {
        Node u;
        u.name = namer.fresh(prefix + "stack_" + std::to_string(k));
        u.op_type = "Unsqueeze";
        u.inputs = {read(body.outputs[1 + n + k].name)};
        if (axes.empty()) u.attributes.push_back(Attribute::make_ints("axes", {0}));
        else u.inputs.push_back(axes);
        u.outputs = {namer.fresh(u.name)};
        parts[k].push_back(u.outputs[0]);
        out.push_back(std::move(u));
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (loop.outputs[i].empty()) continue;
      Node id;
      id.name = namer.fresh(loop.name + "/carried_" + std::to_string(i));
      id.op_type = "Identity";
      id.inputs = {carried[i]};
      id.outputs = {loop.outputs[i]};
      out.push_back(std::move(id));
    }
    for (size_t k = 0; k < scans; ++k) {
      if (loop.outputs[n + k].empty()) continue;
      Node cat;
      cat.name = namer.fresh(loop.name + "/scan_" + std::to_string(k));
      cat.op_type = "Concat";
      cat.inputs = parts[k];
      cat.outputs = {loop.outputs[n + k]};
      cat.attributes.push_back(Attribute::make_int("axis", 0));
      out.push_back(std::move(cat));
    }
  }
};

}  // namespace

ORT_REGISTER_PASS(LoopUnrolling);

}  // namespace ort_train
