// common_subexpression_elimination: of nodes computing the same thing (same
// domain, op, attributes and input values), the first is kept and the readers
// of the others read its outputs instead; the others are removed.
//
// Walking in topological order and rewiring as it goes merges whole chains in
// one application: once two nodes are merged, their readers read the same
// names and compare equal too. Attributes compare by a canonical encoding of
// their values (sorted by name, floats by bit pattern, so 0.0 and -0.0 stay
// apart and a NaN equals itself). Inputs compare by name, so two nodes
// reading the same graph input merge (it is one value per run).
//
// Never merged: random ops (each node draws its own numbers), training-step
// ops, nodes with subgraphs, nodes without outputs, duplicates writing a
// protected value, and an Identity duplicate writing a graph output (the
// output keeps its name through an Identity anyway, see
// GraphIndex::replace_all_uses, so that would gain nothing).
//
// Identical initializers (same dtype, dims and bytes, at most
// kMaxMergedInitializerBytes) merge first, so nodes reading copies of the same
// constant (exporters repeat shape constants) become equal. Protected ones,
// graph inputs and graph outputs are left alone.
#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <unordered_map>

#include "graph/graph_index.h"
#include "graph/passes/op_traits.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

constexpr size_t kMaxMergedInitializerBytes = size_t{1} << 16;

// Appends a length-prefixed field, so no field's bytes can mimic a separator.
void add_field(std::string& key, std::string_view s) {
  key += std::to_string(s.size());
  key += ':';
  key += s;
}

void add_number(std::string& key, int64_t v) { add_field(key, std::to_string(v)); }

void add_float(std::string& key, float f) { add_number(key, std::bit_cast<uint32_t>(f)); }

// False when the tensor's bytes do not hold its value (strings).
bool add_tensor(std::string& key, const Tensor& t) {
  add_number(key, static_cast<int64_t>(t.dtype()));
  add_number(key, t.rank());
  for (int64_t d : t.dims()) add_number(key, d);
  if (t.numel() > 0 && dtype_size(t.dtype()) == 0) return false;
  if (t.numel() > 0 && t.device() != DeviceKind::kCpu) return false;
  add_field(key, std::string_view(static_cast<const char*>(t.raw()), t.nbytes()));
  return true;
}

bool add_attribute(std::string& key, const Attribute& a) {
  add_field(key, a.name);
  add_number(key, static_cast<int64_t>(a.type));
  add_float(key, a.f);
  add_number(key, a.i);
  add_field(key, a.s);
  if (a.t.defined() && !add_tensor(key, a.t)) return false;
  add_number(key, static_cast<int64_t>(a.floats.size()));
  for (float f : a.floats) add_float(key, f);
  add_number(key, static_cast<int64_t>(a.ints.size()));
  for (int64_t i : a.ints) add_number(key, i);
  add_number(key, static_cast<int64_t>(a.strings.size()));
  for (const std::string& s : a.strings) add_field(key, s);
  add_number(key, static_cast<int64_t>(a.tensors.size()));
  for (const Tensor& t : a.tensors)
    if (!add_tensor(key, t)) return false;
  add_field(key, a.ref_attr_name);
  add_field(key, a.opaque_proto);
  return true;
}

// What a node computes, as a string equal for equal computations; nullopt
// when its attributes cannot be compared.
std::optional<std::string> node_key(const Node& n) {
  std::string key;
  add_field(key, n.domain);
  add_field(key, n.op_type);
  add_number(key, static_cast<int64_t>(n.inputs.size()));
  for (const std::string& in : n.inputs) add_field(key, in);
  // Which outputs exist: a duplicate's outputs must all have a counterpart.
  std::string present;
  for (const std::string& o : n.outputs) present += o.empty() ? '0' : '1';
  add_field(key, present);
  std::vector<const Attribute*> attrs;
  for (const Attribute& a : n.attributes) attrs.push_back(&a);
  std::sort(attrs.begin(), attrs.end(), [](const Attribute* x, const Attribute* y) { return x->name < y->name; });
  for (const Attribute* a : attrs)
    if (!add_attribute(key, *a)) return std::nullopt;
  return key;
}

class CommonSubexpressionElimination : public Pass {
 public:
  std::string name() const override { return "common_subexpression_elimination"; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    const std::set<std::string> keep = protected_values(g, ctx);
    GraphIndex& index = ctx.index(g);
    int64_t changed = 0;
    RETURN_IF_ERROR(merge_initializers(index, keep, changed));
    RETURN_IF_ERROR(merge_nodes(index, keep, changed));
    ctx.count(changed);
    return changed > 0;
  }

 private:
  static Status merge_initializers(GraphIndex& index, const std::set<std::string>& keep, int64_t& changed) {
    Graph& g = index.graph();
    std::unordered_map<std::string, std::string> first_with_key;
    std::vector<std::string> merged;
    for (const auto& [name, t] : g.initializers) {  // by name: a deterministic choice of the one kept
      if (keep.count(name) || index.is_graph_input(name) || index.is_graph_output(name)) continue;
      if (t.nbytes() > kMaxMergedInitializerBytes) continue;
      std::string key;
      if (!add_tensor(key, t)) continue;
      auto [it, inserted] = first_with_key.emplace(std::move(key), name);
      if (inserted) continue;
      RETURN_IF_ERROR(index.replace_all_uses(name, it->second));
      merged.push_back(name);
    }
    for (const std::string& name : merged) {
      g.initializers.erase(name);
      g.values.erase(name);
      std::erase(g.initializer_order, name);
      std::erase(g.declared_value_infos, name);
    }
    changed += static_cast<int64_t>(merged.size());
    return Status::Ok();
  }

  static Status merge_nodes(GraphIndex& index, const std::set<std::string>& keep, int64_t& changed) {
    Graph& g = index.graph();
    std::unordered_map<std::string, size_t> first_with_key;
    std::vector<size_t> duplicates;
    // Appended Identity nodes are visited too; they never count as duplicates
    // of a node writing the same graph output (see the header comment).
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (!is_mergeable_op(n)) continue;
      bool has_output = false, writes_protected = false, writes_graph_output = false;
      for (const std::string& o : n.outputs) {
        if (o.empty()) continue;
        has_output = true;
        writes_protected = writes_protected || keep.count(o);
        writes_graph_output = writes_graph_output || index.is_graph_output(o);
      }
      if (!has_output) continue;
      std::optional<std::string> key = node_key(n);
      if (!key) continue;
      auto [it, inserted] = first_with_key.emplace(std::move(*key), i);
      if (inserted || writes_protected) continue;
      if (n.op_type == "Identity" && n.domain.empty() && writes_graph_output) continue;
      // Copies: replace_all_uses may append an Identity, moving g.nodes.
      const std::vector<std::string> outputs = n.outputs;
      const std::vector<std::string> kept = g.nodes[it->second].outputs;
      size_t before = g.nodes.size();
      for (size_t k = 0; k < outputs.size(); ++k)
        if (!outputs[k].empty()) RETURN_IF_ERROR(index.replace_all_uses(outputs[k], kept[k]));
      duplicates.push_back(i);
      changed += 1 + static_cast<int64_t>(g.nodes.size() - before);
    }
    index.remove_nodes(duplicates);
    return Status::Ok();
  }
};

ORT_REGISTER_PASS(CommonSubexpressionElimination);

}  // namespace
}  // namespace ort_train
