// memory_aware_order: reorders the nodes, within what their dependencies
// allow, so that intermediates die as early as possible: ONNX Runtime's
// priority-based topological order for training, by a byte count instead of
// hand-set priorities. The backward as autodiff writes it runs each forward
// node's gradient where the reverse walk reaches it; a node that frees more
// than it allocates (a weight gradient reading the last use of an
// activation, a Sum that folds two partial gradients into one) often waits
// behind others that allocate. A list scheduler picks, among the nodes whose
// inputs are ready, the one that frees the most bytes net, and otherwise
// keeps the original order.
//
// Sizes come from the inferred shapes, so the pass runs only on the training
// graph after its backward, whose dims the description binds
// (PassContext::shapes_bound). Graph outputs, inputs and initializers live anyway and
// count for nothing; a view op's output shares its input's buffer, as the
// executor makes it (runtime/executor.h, estimate_memory). The new order is
// kept only when its simulated peak of live intermediates is lower than the
// old one's. Exact: every node computes what it did, on the same inputs.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "graph/passes/op_traits.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

// Who reads and makes which buffer, by index.
struct Buffers {
  std::vector<uint64_t> bytes;               // per buffer; 0 when pinned or unknown
  std::vector<std::vector<size_t>> readers;  // per buffer: distinct nodes reading any alias of it
  std::vector<std::vector<size_t>> reads;    // per node: distinct buffers it reads
  std::vector<std::vector<size_t>> makes;    // per node: buffers it allocates (not views)
  std::vector<std::vector<size_t>> users;    // per node: nodes that read one of its outputs
  std::vector<size_t> producers;             // per node: how many distinct nodes it reads from
  uint64_t known = 0;                        // bytes of all counted buffers

  explicit Buffers(const Graph& g) {
    std::unordered_map<std::string, size_t> buffer_of;
    std::unordered_map<std::string, size_t> producer_of;
    std::set<std::string> pinned;
    for (const ValueInfo& v : g.inputs) pinned.insert(v.name);
    for (const ValueInfo& v : g.outputs) pinned.insert(v.name);
    auto value_bytes = [&](const std::string& name) -> uint64_t {
      const ValueInfo* v = g.value(name);
      if (!v || !v->shape || !shape_fully_known(*v->shape) || dtype_size(v->dtype) == 0) return 0;
      uint64_t n = dtype_size(v->dtype);
      for (const Dim& d : *v->shape) n = d.value == 0 ? 0 : std::min<uint64_t>(n * static_cast<uint64_t>(d.value), uint64_t{1} << 50);
      return n;
    };
    const size_t count = g.nodes.size();
    reads.resize(count);
    makes.resize(count);
    users.resize(count);
    producers.assign(count, 0);
    std::vector<bool> buffer_pinned;
    // The last node (plus one) that listed each buffer among its reads: a Sum
    // of a weight's 25k gradient contributions would otherwise search its
    // list once per input, quadratic in its inputs.
    std::vector<size_t> listed_by;
    for (size_t i = 0; i < count; ++i) {
      const Node& n = g.nodes[i];
      std::set<size_t> from;
      for (const std::string& in : n.inputs) {
        if (in.empty()) continue;
        if (auto p = producer_of.find(in); p != producer_of.end()) from.insert(p->second);
        auto b = buffer_of.find(in);
        if (b == buffer_of.end()) continue;  // a graph input or initializer: lives anyway
        if (listed_by[b->second] != i + 1) {
          listed_by[b->second] = i + 1;
          reads[i].push_back(b->second);
        }
      }
      producers[i] = from.size();
      for (size_t p : from) users[p].push_back(i);
      bool view = is_view_op(n) && !n.inputs.empty() && buffer_of.count(n.inputs[0]);
      for (const std::string& out : n.outputs) {
        if (out.empty()) continue;
        producer_of[out] = i;
        if (view && out == n.outputs[0]) {
          size_t b = buffer_of.at(n.inputs[0]);
          buffer_of[out] = b;
          if (pinned.count(out)) buffer_pinned[b] = true;
          continue;
        }
        buffer_of[out] = bytes.size();
        makes[i].push_back(bytes.size());
        bytes.push_back(value_bytes(out));
        buffer_pinned.push_back(pinned.count(out) > 0);
        listed_by.push_back(0);
      }
    }
    readers.resize(bytes.size());
    for (size_t i = 0; i < count; ++i)
      for (size_t b : reads[i]) readers[b].push_back(i);
    for (size_t b = 0; b < bytes.size(); ++b) {
      if (buffer_pinned[b]) bytes[b] = 0;
      known += bytes[b];
    }
  }

  // The largest sum of live buffers when the nodes run in `order`.
  uint64_t peak(const std::vector<size_t>& order) const {
    std::vector<size_t> left(readers.size());
    for (size_t b = 0; b < readers.size(); ++b) left[b] = readers[b].size();
    uint64_t live = 0, top = 0;
    for (size_t i : order) {
      for (size_t b : makes[i]) live += bytes[b];
      top = std::max(top, live);
      for (size_t b : reads[i])
        if (--left[b] == 0) live -= bytes[b];
      for (size_t b : makes[i])
        if (readers[b].empty()) live -= bytes[b];
    }
    return top;
  }
};

// List scheduling: among the ready nodes, the one that frees the most bytes
// net of what it keeps allocated; ties (most nodes: net allocations) in the
// original order.
std::vector<size_t> schedule(const Buffers& buf) {
  const size_t count = buf.reads.size();
  std::vector<size_t> left(buf.readers.size()), waiting = buf.producers;
  for (size_t b = 0; b < buf.readers.size(); ++b) left[b] = buf.readers[b].size();
  std::vector<bool> done(count, false);
  auto priority = [&](size_t i) -> int64_t {
    int64_t net = 0;
    for (size_t b : buf.reads[i])
      if (left[b] == 1) net -= static_cast<int64_t>(buf.bytes[b]);
    for (size_t b : buf.makes[i])
      if (!buf.readers[b].empty()) net += static_cast<int64_t>(buf.bytes[b]);
    return std::min<int64_t>(net, 0);  // only freeing moves a node ahead
  };
  std::set<std::pair<int64_t, size_t>> ready;
  std::vector<int64_t> key(count, 0);
  for (size_t i = 0; i < count; ++i)
    if (waiting[i] == 0) ready.insert({key[i] = priority(i), i});
  std::vector<size_t> order;
  order.reserve(count);
  while (!ready.empty()) {
    size_t u = ready.begin()->second;
    ready.erase(ready.begin());
    done[u] = true;
    order.push_back(u);
    for (size_t b : buf.reads[u])
      if (--left[b] == 1)  // its last reader now frees it: that reader's key changes
        for (size_t r : buf.readers[b])
          if (!done[r] && waiting[r] == 0) {
            ready.erase({key[r], r});
            ready.insert({key[r] = priority(r), r});
          }
    for (size_t v : buf.users[u])
      if (--waiting[v] == 0) ready.insert({key[v] = priority(v), v});
  }
  return order;
}

std::string mib(uint64_t bytes) { return fmt::format("{:.3f} MiB", static_cast<double>(bytes) / (1 << 20)); }

class MemoryAwareOrder : public Pass {
 public:
  std::string name() const override { return "memory_aware_order"; }
  // Sizes are bound only in the training graph after its backward.
  PassOrder order() const override { return {.phases = kBackwardPhase}; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    // Only the training graph after its backward: its sizes are bound, and
    // an order chosen for the forward alone would be redone there anyway.
    if (!ctx.shapes_bound) return false;
    Graph& g = model.graph;
    Buffers buf(g);
    if (buf.known == 0) return false;  // no sizes to order by
    std::vector<size_t> original(g.nodes.size());
    for (size_t i = 0; i < original.size(); ++i) original[i] = i;
    std::vector<size_t> order = schedule(buf);
    if (order.size() != g.nodes.size())
      return make_error(ErrorCode::kInternal, "memory_aware_order: {} of {} nodes scheduled: the graph has a cycle", order.size(), g.nodes.size());
    uint64_t before = buf.peak(original), after = buf.peak(order);
    // A gain under 1% is noise, not worth a different order.
    if (after >= before - before / 100) return false;
    int64_t moved = 0;
    for (size_t i = 0; i < order.size(); ++i) moved += order[i] != i;
    ctx.count(moved);
    ctx.note(fmt::format("{} nodes moved: planned peak of intermediates {} -> {}", moved, mib(before), mib(after)));
    std::vector<Node> nodes;
    nodes.reserve(order.size());
    for (size_t i : order) nodes.push_back(std::move(g.nodes[i]));
    g.nodes = std::move(nodes);
    return true;
  }
};

ORT_REGISTER_PASS(MemoryAwareOrder);

}  // namespace
}  // namespace ort_train
