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
  // (Split sizes given are lowered by lower(); this is the chunk size, or
  // none, over a dim of a size the file does not fix.)
  bool lower_split(size_t at) {
    const Node s = g_.nodes[at];
    const std::string& seq = s.outputs[0];
    if (is_graph_output(seq)) return false;
    const int64_t axis = s.attr_int("axis", 0);
    const bool keepdims = s.attr_int("keepdims", 1) != 0;
    std::optional<std::vector<int64_t>> split;
    if (s.has_input(1)) {
      split = constant_ints(s.inputs[1]);
      if (!split || split->size() != 1) return false;
    }
    const int64_t size = split ? (*split)[0] : 1;
    if (size < 1) return false;
    std::vector<std::pair<size_t, std::pair<int64_t, int64_t>>> chunks;  // SequenceAt node -> [start, end)
    for (size_t c : consumers(seq)) {
      const Node& n = g_.nodes[c];
      if (n.op_type != "SequenceAt" || !n.domain.empty() || n.inputs[0] != seq) return false;
      auto pos = constant_ints(n.inputs[1]);
      if (!pos || pos->size() != 1 || (*pos)[0] < 0) return false;  // counted from the end: needs the dim's size
      int64_t start = 0, end = 0;
      if (__builtin_mul_overflow((*pos)[0], size, &start) || __builtin_add_overflow(start, size, &end)) return false;
      chunks.push_back({c, {start, end}});
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

  // Follows every sequence whose tensors the file fixes, node by node:
  // SequenceEmpty, SequenceConstruct, SequenceInsert and SequenceErase at
  // constant positions, SplitToSequence into chunks of known sizes (Slices),
  // Identity. Its readers become tensor ops: SequenceAt an Identity of its
  // tensor, ConcatFromSequence a Concat, SequenceLength a constant. A reader
  // that cannot be (a position known at run time, a subgraph, another op, a
  // graph output) gets the sequence back as one SequenceConstruct of its
  // tensors, which the executor then refuses by name.
  Result<std::vector<std::string>> run() {
    std::vector<std::string> lowered;
    const std::vector<Node> nodes = g_.nodes;
    std::vector<Node> out;
    for (const Node& n : nodes) {
      std::vector<Node> repl;
      const bool lowers = n.domain.empty() && lower(n, repl);
      if (!error_.empty()) return invalid_argument("{}", error_);
      written_ += static_cast<int64_t>(repl.size());
      if (written_ > kMaxLoweredNodes)
        return invalid_argument("{}: lowering the sequences writes more than {} nodes", n.describe(),
                                kMaxLoweredNodes);
      if (lowers) {
        if (n.op_type != "SequenceAt" && n.op_type != "SequenceLength" && n.op_type != "ConcatFromSequence")
          lowered.push_back(n.name);
        for (Node& r : repl) out.push_back(std::move(r));
        continue;
      }
      const bool has_subgraph = std::any_of(n.attributes.begin(), n.attributes.end(), [](const Attribute& a) {
        return a.type == Attribute::Type::kGraph || a.type == Attribute::Type::kGraphs;
      });
      for (const auto& [seq, tensors] : known_)  // a subgraph may read any of them by name
        if (has_subgraph || std::find(n.inputs.begin(), n.inputs.end(), seq) != n.inputs.end())
          materialize(seq, out);
      out.push_back(n);
    }
    for (const ValueInfo& o : g_.outputs)
      if (known_.count(o.name)) materialize(o.name, out);
    g_.nodes = std::move(out);
    for (const auto& [seq, tensors] : known_)
      if (!materialized_.count(seq)) {
        g_.values.erase(seq);
        std::erase(g_.declared_value_infos, seq);
      }
    reindex();
    // Chunks of a size the file does not fix: SequenceAt at constant positions only.
    for (size_t i = g_.nodes.size(); i-- > 0;) {
      const Node& n = g_.nodes[i];
      if (!n.domain.empty() || n.op_type != "SplitToSequence" || n.outputs.empty() || n.outputs[0].empty()) continue;
      std::string name = n.name, seq = n.outputs[0];
      if (!lower_split(i)) continue;
      lowered.push_back(name);
      g_.values.erase(seq);
      std::erase(g_.declared_value_infos, seq);
    }
    return lowered;
  }

  // One position of a sequence of `count`: `pos` (nullopt: the default) in
  // [-count, count - 1], or [-count, count] when inserting.
  static std::optional<size_t> position(std::optional<int64_t> pos, size_t count, bool insert) {
    const auto c = static_cast<int64_t>(count);
    int64_t p = pos ? *pos : (insert ? c : c - 1);
    if (p < -c || p > (insert ? c : c - 1)) return std::nullopt;
    return static_cast<size_t>(p < 0 ? p + c : p);
  }

  // The single constant value of an optional position input: {known, value}.
  std::pair<bool, std::optional<int64_t>> position_input(const Node& n, size_t i) const {
    if (!n.has_input(i)) return {true, std::nullopt};
    auto v = constant_ints(n.inputs[i]);
    if (!v || v->size() != 1) return {false, std::nullopt};
    return {true, (*v)[0]};
  }

  // The tensor ops replacing `n`, when every sequence it reads is known.
  bool lower(const Node& n, std::vector<Node>& repl) {
    const std::string& op = n.op_type;
    const std::string out = n.outputs.empty() ? "" : n.outputs[0];
    if (out.empty()) return false;
    auto seq_in = [&]() -> const std::vector<std::string>* {
      auto it = n.inputs.empty() ? known_.end() : known_.find(n.inputs[0]);
      return it == known_.end() || materialized_.count(it->first) ? nullptr : &it->second;
    };
    if (op == "SequenceEmpty") {
      known_[out] = {};
      return true;
    }
    if (op == "SequenceConstruct") {
      known_[out] = n.inputs;
      return true;
    }
    if (op == "SplitToSequence") {
      auto chunks = split_chunks(n);
      if (!chunks) return false;
      if (chunks->size() > static_cast<size_t>(kMaxSequenceTensors)) {
        error_ = fmt::format("{}: splits into more than {} tensors, the most a sequence is lowered into",
                             n.describe(), kMaxSequenceTensors);
        return false;
      }
      const int64_t axis = n.attr_int("axis", 0);
      const bool squeeze_axis = !n.has_input(1) && n.attr_int("keepdims", 1) == 0;
      std::vector<std::string> tensors;
      for (size_t k = 0; k < chunks->size(); ++k) {
        const std::string base = fmt::format("{}/{}", n.name, k);
        std::string chunk = fresh(fmt::format("{}/{}", out, k));
        const std::string sliced = squeeze_axis ? fresh(chunk + "/kept") : chunk;
        repl.push_back(node("Slice",
                            {n.inputs[0], ints({(*chunks)[k].first}, base + "/starts"),
                             ints({(*chunks)[k].second}, base + "/ends"), ints({axis}, base + "/axes")},
                            {sliced}, base + "/slice"));
        if (squeeze_axis) repl.push_back(squeeze(sliced, axis, chunk, base + "/squeeze"));
        tensors.push_back(chunk);
      }
      known_[out] = std::move(tensors);
      return true;
    }
    const std::vector<std::string>* seq = seq_in();
    if (!seq) return false;
    if (op == "Identity") {
      known_[out] = *seq;
      return true;
    }
    if (op == "SequenceInsert" || op == "SequenceErase" || op == "SequenceAt") {
      const bool insert = op == "SequenceInsert";
      auto [fixed, pos] = position_input(n, insert ? 2 : 1);
      if (!fixed || (op == "SequenceAt" && !pos)) return false;
      std::optional<size_t> p = position(pos, seq->size(), insert);
      if (!p) return false;
      std::vector<std::string> tensors = *seq;
      if (op == "SequenceAt") {
        repl.push_back(node("Identity", {tensors[*p]}, {out}, n.name));
        return true;
      }
      if (insert) {
        if (!n.has_input(1)) return false;
        tensors.insert(tensors.begin() + static_cast<std::ptrdiff_t>(*p), n.inputs[1]);
      } else {
        tensors.erase(tensors.begin() + static_cast<std::ptrdiff_t>(*p));
      }
      known_[out] = std::move(tensors);
      return true;
    }
    if (op == "SequenceLength") {
      Node k = node("Constant", {}, {out}, n.name);
      k.attributes.push_back(
          Attribute::make_tensor("value", Tensor::from_vector<int64_t>({}, {static_cast<int64_t>(seq->size())})));
      repl.push_back(std::move(k));
      return true;
    }
    if (op == "ConcatFromSequence" && !seq->empty()) {
      const int64_t axis = n.attr_int("axis", 0);
      std::vector<std::string> parts = *seq;
      if (n.attr_int("new_axis", 0) != 0)
        for (std::string& part : parts) {
          std::string u = fresh(part + "/unsqueezed");
          repl.push_back(unsqueeze(part, axis, u, n.name + "/unsqueeze"));
          part = u;
        }
      Node concat = node("Concat", parts, {out}, n.name);
      concat.attributes.push_back(Attribute::make_int("axis", axis));
      repl.push_back(std::move(concat));
      return true;
    }
    return false;
  }

  // SplitToSequence's chunks as [start, end) along its axis, when the file
  // fixes them: split sizes given, or a chunk size (or none: 1) and the dim.
  std::optional<std::vector<std::pair<int64_t, int64_t>>> split_chunks(const Node& n) const {
    std::vector<std::pair<int64_t, int64_t>> chunks;
    std::optional<std::vector<int64_t>> split;
    if (n.has_input(1)) {
      split = constant_ints(n.inputs[1]);
      if (!split) return std::nullopt;
      const std::string& v = n.inputs[1];
      const bool scalar = g_.initializers.count(v) ? g_.initializers.at(v).rank() == 0 : constant_rank(v) == 0;
      if (!scalar) {
        int64_t start = 0;
        for (int64_t size : *split) {
          int64_t end = 0;
          if (size < 0 || __builtin_add_overflow(start, size, &end)) return std::nullopt;
          chunks.push_back({start, end});
          start = end;
        }
        return chunks;
      }
    }
    const int64_t size = split ? (*split)[0] : 1;
    const ValueInfo* x = g_.value(n.inputs[0]);
    for (const ValueInfo& in : g_.inputs)
      if (!x && in.name == n.inputs[0]) x = &in;
    std::optional<Dims> dims;
    if (g_.initializers.count(n.inputs[0])) dims = g_.initializers.at(n.inputs[0]).dims();
    else if (x && x->shape && shape_fully_known(*x->shape)) dims = dims_from_shape(*x->shape);
    if (!dims || size < 1) return std::nullopt;
    int64_t axis = n.attr_int("axis", 0);
    const auto rank = static_cast<int64_t>(dims->size());
    if (axis < -rank || axis >= rank) return std::nullopt;
    const int64_t length = (*dims)[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    if (length / size >= kMaxSequenceTensors) return std::vector<std::pair<int64_t, int64_t>>(kMaxSequenceTensors + 1);
    for (int64_t start = 0; start < length; start += size) chunks.push_back({start, std::min(start + size, length)});
    return chunks;
  }

  // The sequence as one SequenceConstruct (SequenceEmpty when it holds none), once.
  void materialize(const std::string& seq, std::vector<Node>& into) {
    if (!materialized_.insert(seq).second) return;
    const std::vector<std::string>& tensors = known_.at(seq);
    into.push_back(node(tensors.empty() ? "SequenceEmpty" : "SequenceConstruct", tensors, {seq}, seq + "/construct"));
  }

 private:
  // Bounds on what the lowering writes (issue 52: a SplitToSequence with a
  // 2*10^6-element split list became 2*10^6 Slices; a long sequence read by
  // many ConcatFromSequence nodes multiplies): far above any export's.
  static constexpr int64_t kMaxSequenceTensors = int64_t{1} << 16;
  static constexpr int64_t kMaxLoweredNodes = int64_t{1} << 18;
  std::string error_;
  int64_t written_ = 0;

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
  std::map<std::string, std::vector<std::string>> known_;  // sequence -> its tensors, in order
  std::set<std::string> materialized_;                     // given back as a SequenceConstruct
};

}  // namespace

Result<std::vector<std::string>> lower_sequences(Model& model) { return Lowering(model).run(); }

}  // namespace ort_train
