#include "graph/sequence_lowering.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace ort_train {
namespace {

class Lowering {
 public:
  explicit Lowering(Model& m) : m_(m), g_(m.graph) {
    reindex();
    for (const Node& n : g_.nodes) taken_.insert(n.name);
  }

  // Integer values of a value fixed in the file: an initializer or a Constant node's output.
  std::optional<std::vector<int64_t>> constant_ints(const std::string& v) const {
    if (v.empty()) return std::nullopt;
    if (auto it = g_.initializers.find(v); it != g_.initializers.end()) {
      if (!is_integer(it->second.dtype())) return std::nullopt;
      return it->second.to_int64_vector();
    }
    auto p = producer_.find(v);
    if (p == producer_.end() || p->second->op_type != "Constant" || !p->second->domain.empty()) return std::nullopt;
    const Node& c = *p->second;
    if (const Attribute* a = c.attr("value"); a && a->type == Attribute::Type::kTensor && is_integer(a->t.dtype()))
      return a->t.to_int64_vector();
    if (const Attribute* a = c.attr("value_int")) return std::vector<int64_t>{a->i};
    if (const Attribute* a = c.attr("value_ints")) return a->ints;
    return std::nullopt;
  }

  std::vector<size_t> consumers(const std::string& v) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (std::find(g_.nodes[i].inputs.begin(), g_.nodes[i].inputs.end(), v) != g_.nodes[i].inputs.end())
        out.push_back(i);
    return out;
  }

  bool is_graph_output(const std::string& v) const {
    return std::any_of(g_.outputs.begin(), g_.outputs.end(), [&](const ValueInfo& o) { return o.name == v; });
  }

  // A 1-D int64 initializer with a fresh name.
  std::string ints(const std::vector<int64_t>& values, const std::string& hint) {
    std::string name = fresh(hint);
    g_.initializers[name] = Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
    g_.initializer_order.push_back(name);
    g_.values[name] = ValueInfo{name, DType::kInt64, Shape{Dim(static_cast<int64_t>(values.size()))}};
    return name;
  }

  std::string fresh(const std::string& hint) {
    std::string name = hint;
    for (int k = 1; g_.values.count(name) || g_.initializers.count(name) || taken_.count(name); ++k)
      name = fmt::format("{}_{}", hint, k);
    taken_.insert(name);
    return name;
  }

  Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out, const std::string& name) {
    Node n;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    n.name = fresh(name);
    return n;
  }

  // A squeeze of `axis`: its axes an input from opset 13, an attribute before.
  Node squeeze(const std::string& x, int64_t axis, const std::string& out, const std::string& name) {
    if (m_.opset("") >= 13) return node("Squeeze", {x, ints({axis}, name + "/axes")}, {out}, name);
    Node n = node("Squeeze", {x}, {out}, name);
    n.attributes.push_back(Attribute::make_ints("axes", {axis}));
    return n;
  }

  Node unsqueeze(const std::string& x, int64_t axis, const std::string& out, const std::string& name) {
    if (m_.opset("") >= 13) return node("Unsqueeze", {x, ints({axis}, name + "/axes")}, {out}, name);
    Node n = node("Unsqueeze", {x}, {out}, name);
    n.attributes.push_back(Attribute::make_ints("axes", {axis}));
    return n;
  }

  // SplitToSequence: each SequenceAt becomes the Slice of its chunk; false
  // (nothing changed) when one of its readers cannot be lowered.
  bool lower_split(size_t at) {
    const Node s = g_.nodes[at];
    const std::string& seq = s.outputs[0];
    if (is_graph_output(seq)) return false;
    const int64_t axis = s.attr_int("axis", 0);
    const bool keepdims = s.attr_int("keepdims", 1) != 0;
    std::optional<std::vector<int64_t>> split;
    bool scalar_split = false;
    if (s.has_input(1)) {
      split = constant_ints(s.inputs[1]);
      if (!split) return false;
      const Tensor* t = g_.initializers.count(s.inputs[1]) ? &g_.initializers.at(s.inputs[1]) : nullptr;
      scalar_split = t ? t->rank() == 0 : split->size() == 1 && constant_rank(s.inputs[1]) == 0;
    }
    std::vector<std::pair<size_t, std::pair<int64_t, int64_t>>> chunks;  // SequenceAt node -> [start, end)
    for (size_t c : consumers(seq)) {
      const Node& n = g_.nodes[c];
      if (n.op_type != "SequenceAt" || !n.domain.empty() || n.inputs[0] != seq) return false;
      auto pos = constant_ints(n.inputs[1]);
      if (!pos || pos->size() != 1) return false;
      int64_t p = (*pos)[0];
      if (!split || scalar_split) {
        if (p < 0) return false;  // counted from the end: needs the dim's size
        int64_t size = split ? (*split)[0] : 1;
        if (size < 1) return false;
        chunks.push_back({c, {p * size, (p + 1) * size}});
      } else {
        const auto count = static_cast<int64_t>(split->size());
        if (p < -count || p >= count) return false;
        if (p < 0) p += count;
        int64_t start = 0;
        for (int64_t k = 0; k < p; ++k) start += (*split)[static_cast<size_t>(k)];
        chunks.push_back({c, {start, start + (*split)[static_cast<size_t>(p)]}});
      }
    }
    // Replaced back to front, so earlier indices stay valid.
    std::sort(chunks.begin(), chunks.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [c, range] : chunks) {
      const std::string out = g_.nodes[c].outputs[0];
      const std::string base = g_.nodes[c].name;
      const bool squeeze_axis = !split && !keepdims;
      const std::string sliced = squeeze_axis ? fresh(out + "/chunk") : out;
      std::vector<Node> repl{node("Slice",
                                  {s.inputs[0], ints({range.first}, base + "/starts"), ints({range.second}, base + "/ends"),
                                   ints({axis}, base + "/axes")},
                                  {sliced}, base + "/slice")};
      if (squeeze_axis) repl.push_back(squeeze(sliced, axis, out, base + "/squeeze"));
      replace(c, repl);
    }
    erase_node(at);
    return true;
  }

  bool lower_construct(size_t at) {
    const Node s = g_.nodes[at];
    const std::string& seq = s.outputs[0];
    if (is_graph_output(seq)) return false;
    const auto count = static_cast<int64_t>(s.inputs.size());
    std::vector<std::pair<size_t, std::vector<Node>>> plan;
    for (size_t c : consumers(seq)) {
      const Node& n = g_.nodes[c];
      if (!n.domain.empty() || n.inputs[0] != seq) return false;
      const std::string& out = n.outputs[0];
      if (n.op_type == "SequenceAt") {
        auto pos = constant_ints(n.inputs[1]);
        if (!pos || pos->size() != 1 || (*pos)[0] < -count || (*pos)[0] >= count) return false;
        int64_t p = (*pos)[0] < 0 ? (*pos)[0] + count : (*pos)[0];
        plan.push_back({c, {node("Identity", {s.inputs[static_cast<size_t>(p)]}, {out}, n.name)}});
      } else if (n.op_type == "ConcatFromSequence") {
        const int64_t axis = n.attr_int("axis", 0);
        std::vector<Node> repl;
        std::vector<std::string> parts = s.inputs;
        if (n.attr_int("new_axis", 0) != 0)
          for (std::string& part : parts) {
            std::string u = fresh(part + "/unsqueezed");
            repl.push_back(unsqueeze(part, axis, u, n.name + "/unsqueeze"));
            part = u;
          }
        Node concat = node("Concat", parts, {out}, n.name);
        concat.attributes.push_back(Attribute::make_int("axis", axis));
        repl.push_back(std::move(concat));
        plan.push_back({c, std::move(repl)});
      } else if (n.op_type == "SequenceLength") {
        Node k = node("Constant", {}, {out}, n.name);
        k.attributes.push_back(Attribute::make_tensor("value", Tensor::from_vector<int64_t>({}, {count})));
        plan.push_back({c, {std::move(k)}});
      } else {
        return false;
      }
    }
    std::sort(plan.begin(), plan.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [c, repl] : plan) replace(c, repl);
    erase_node(at);
    return true;
  }

  Result<std::vector<std::string>> run() {
    std::vector<std::string> lowered;
    for (size_t i = g_.nodes.size(); i-- > 0;) {
      const Node& n = g_.nodes[i];
      if (!n.domain.empty() || (n.op_type != "SplitToSequence" && n.op_type != "SequenceConstruct")) continue;
      std::string name = n.name, seq = n.outputs.empty() ? "" : n.outputs[0];
      if (seq.empty()) continue;
      bool done = n.op_type == "SplitToSequence" ? lower_split(i) : lower_construct(i);
      if (!done) continue;
      lowered.push_back(name);
      g_.values.erase(seq);
      std::erase(g_.declared_value_infos, seq);
    }
    return lowered;
  }

 private:
  static bool is_integer(DType t) { return t == DType::kInt64 || t == DType::kInt32; }

  int64_t constant_rank(const std::string& v) const {
    auto p = producer_.find(v);
    if (p != producer_.end())
      if (const Attribute* a = p->second->attr("value"); a && a->type == Attribute::Type::kTensor) return a->t.rank();
    if (p != producer_.end() && p->second->attr("value_int")) return 0;
    return 1;
  }

  void replace(size_t at, const std::vector<Node>& with) {
    g_.nodes.erase(g_.nodes.begin() + static_cast<std::ptrdiff_t>(at));
    g_.nodes.insert(g_.nodes.begin() + static_cast<std::ptrdiff_t>(at), with.begin(), with.end());
    reindex();
  }
  void erase_node(size_t at) {
    g_.nodes.erase(g_.nodes.begin() + static_cast<std::ptrdiff_t>(at));
    reindex();
  }
  void reindex() {
    producer_.clear();
    for (const Node& n : g_.nodes)
      for (const std::string& o : n.outputs) producer_[o] = &n;
  }

  Model& m_;
  Graph& g_;
  std::map<std::string, const Node*> producer_;
  std::set<std::string> taken_;
};

}  // namespace

Result<std::vector<std::string>> lower_sequences(Model& model) { return Lowering(model).run(); }

}  // namespace ort_train
