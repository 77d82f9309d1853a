#include "graph/dynamo_export.h"
#include "graph/mapped_external_data.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "graph/onnx_metadata.h"

namespace ort_train {
namespace {

constexpr const char* kSignatureKey = "pkg.torch.export.ExportedProgram.graph_signature";
constexpr const char* kKindKey = "pkg.torch.export.graph_signature.InputSpec.kind";
constexpr const char* kFoldedKey = "pkg.onnxscript.optimizer.folded_from";
constexpr const char* kFxNodeKey = "pkg.torch.onnx.fx_node";

// onnxscript writes folded_from as a Python list repr: ['a', 'b'].
std::vector<std::string> parse_name_list(const std::string& text) {
  std::vector<std::string> names;
  for (size_t i = 0; i < text.size(); ++i) {
    char q = text[i];
    if (q != '\'' && q != '"') continue;
    std::string name;
    for (++i; i < text.size() && text[i] != q; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) ++i;
      name += text[i];
    }
    names.push_back(name);
  }
  return names;
}

// "p_ln_weight: PARAMETER target='ln.weight'" (BUFFERs add " persistent=True").
std::optional<TorchSignature::Entry> parse_entry(const std::string& line) {
  size_t colon = line.find(": ");
  if (colon == std::string::npos) return std::nullopt;
  TorchSignature::Entry e;
  e.placeholder = line.substr(0, colon);
  size_t kind_end = line.find(' ', colon + 2);
  e.kind = line.substr(colon + 2, kind_end == std::string::npos ? std::string::npos : kind_end - colon - 2);
  size_t t = line.find("target='");
  if (t == std::string::npos) return std::nullopt;  // a USER_INPUT: no state
  t += std::strlen("target='");
  size_t end = line.find('\'', t);
  if (end == std::string::npos) return std::nullopt;
  e.target = line.substr(t, end - t);
  return e;
}

std::string unique_node_name(const Graph& g, const std::string& hint) {
  std::string name = hint;
  for (int k = 1; std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.name == name; }); ++k)
    name = fmt::format("{}_{}", hint, k);
  return name;
}

// Whether `a` holds `b` transposed (2-D) or copied (same dims), bit for bit.
// Weights still in their file are compared in copies read for the purpose
// (graph/mapped_external_data.h), not through their mappings.
const char* relation(const Tensor& mapped_a, const Tensor& mapped_b) {
  if (mapped_a.dtype() != mapped_b.dtype() || mapped_a.numel() != mapped_b.numel() || !mapped_a.storage() ||
      !mapped_b.storage())
    return nullptr;
  auto read_a = readable(mapped_a), read_b = readable(mapped_b);
  if (!read_a.ok() || !read_b.ok()) return nullptr;  // the file's error comes when the weight is read in
  const Tensor& a = *read_a;
  const Tensor& b = *read_b;
  const size_t size = dtype_size(a.dtype());
  const auto* pa = static_cast<const unsigned char*>(a.raw());
  const auto* pb = static_cast<const unsigned char*>(b.raw());
  if (a.dims() == b.dims()) return std::memcmp(pa, pb, a.nbytes()) == 0 ? "Identity" : nullptr;
  if (a.rank() != 2 || b.rank() != 2 || a.dims()[0] != b.dims()[1] || a.dims()[1] != b.dims()[0]) return nullptr;
  const int64_t rows = b.dims()[0], cols = b.dims()[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (std::memcmp(pa + (c * rows + r) * size, pb + (r * cols + c) * size, size) != 0) return nullptr;
  return "Transpose";
}

// Every value some initializer was folded from.
std::set<std::string> fold_sources(const Graph& g) {
  std::set<std::string> sources;
  for (const std::string& name : g.initializer_order)
    for (const std::string& f : folded_from(g, name)) sources.insert(f);
  return sources;
}

// Parameters merged into another initializer: each node whose FX node read
// one reads a copy of its own. A node's initializer inputs whose own
// placeholder its FX node does not name were rewired by the merge; the
// merged placeholders its FX node does name are theirs, in argument order.
void unmerge(Model& model, const TorchSignature& sig, std::vector<std::string>& done) {
  Graph& g = model.graph;
  const std::set<std::string> folded_sources = fold_sources(g);
  std::set<std::string> merged;
  for (const TorchSignature::Entry& e : sig.inputs)
    if (!g.is_initializer(e.target) && !folded_sources.count(e.target)) merged.insert(e.target);
  if (merged.empty()) return;
  std::map<std::string, std::vector<std::string>> restored;  // survivor -> merged parameters given back
  for (Node& n : g.nodes) {
    std::vector<std::string> read = fx_placeholders(n);
    if (read.empty()) continue;
    std::vector<size_t> rewired;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const TorchSignature::Entry* own = g.is_initializer(n.inputs[i]) ? sig.by_target(n.inputs[i]) : nullptr;
      if (own && std::find(read.begin(), read.end(), own->placeholder) == read.end()) rewired.push_back(i);
    }
    std::vector<const TorchSignature::Entry*> theirs;
    for (const std::string& p : read)
      if (const TorchSignature::Entry* e = sig.by_placeholder(p); e && merged.count(e->target)) theirs.push_back(e);
    if (rewired.empty() || theirs.size() != rewired.size()) continue;  // cannot tell: stays merged (refused later)
    for (size_t k = 0; k < rewired.size(); ++k) {
      const std::string survivor = n.inputs[rewired[k]];
      const std::string& target = theirs[k]->target;
      if (!g.is_initializer(target)) {
        g.initializers[target] = g.initializers.at(survivor).clone();
        g.initializer_order.push_back(target);
        ValueInfo info = g.values.count(survivor) ? g.values.at(survivor) : ValueInfo{};
        info.name = target;
        info.metadata = {{kKindKey, theirs[k]->kind}};
        g.values[target] = std::move(info);
        restored[survivor].push_back(target);
      }
      n.inputs[rewired[k]] = target;
    }
  }
  for (const auto& [survivor, targets] : restored) {
    std::string list;
    for (const std::string& t : targets) list += (list.empty() ? "" : ", ") + t;
    done.push_back(fmt::format("{} parameter(s) merged into '{}' (equal values) are their own again: {}",
                               targets.size(), survivor, list));
  }
}

// Folds of one parameter still in the file that are its transpose or copy.
void unfold_copies(Model& model, std::vector<std::string>& done) {
  Graph& g = model.graph;
  std::vector<Node> added;
  for (const std::string& name : std::vector<std::string>(g.initializer_order)) {
    std::vector<std::string> from = folded_from(g, name);
    if (from.size() != 1 || !g.is_initializer(from[0]) || initializer_kind(g, from[0]) != "PARAMETER") continue;
    if (std::any_of(g.inputs.begin(), g.inputs.end(), [&](const ValueInfo& v) { return v.name == name; })) continue;
    const char* op = relation(g.initializers.at(name), g.initializers.at(from[0]));
    if (!op) continue;
    Node n;
    n.name = unique_node_name(g, "unfolded/" + name);
    n.op_type = op;
    n.inputs = {from[0]};
    n.outputs = {name};
    if (std::strcmp(op, "Transpose") == 0) n.attributes.push_back(Attribute::make_ints("perm", {1, 0}));
    added.push_back(std::move(n));
    g.initializers.erase(name);
    std::erase(g.initializer_order, name);
    done.push_back(fmt::format("'{}' is '{}' {}: computed from it again, so they train as one", name, from[0],
                               std::strcmp(op, "Transpose") == 0 ? "transposed" : "copied"));
  }
  g.nodes.insert(g.nodes.begin(), added.begin(), added.end());  // they read initializers only
}

// The FX node's call: its target (torch.ops.aten.addmm.default) and its
// positional arguments as written (%p_fc_bias, [32], 1e-05), split at the
// commas of the outer tuple.
struct FxCall {
  std::string target;
  std::vector<std::string> args;
};

std::optional<FxCall> fx_call(const Node& n) {
  const std::string& fx = metadata_value(n.metadata, kFxNodeKey);
  size_t t = fx.find("[target=");
  size_t args = fx.find("](args = (");
  if (t == std::string::npos || args == std::string::npos || args < t) return std::nullopt;
  FxCall call{fx.substr(t + 8, args - t - 8), {}};
  int depth = 0;
  std::string arg;
  for (size_t i = args + 10; i < fx.size(); ++i) {
    char c = fx[i];
    if (depth == 0 && (c == ',' || c == ')')) {
      size_t b = arg.find_first_not_of(' '), e = arg.find_last_not_of(' ');
      if (b != std::string::npos) call.args.push_back(arg.substr(b, e - b + 1));
      arg.clear();
      if (c == ')') return call;
      continue;
    }
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    arg += c;
  }
  return std::nullopt;  // cut short: not a call this code can read
}

// The dims of an initializer or of a value whose shape the file states fully.
std::optional<Dims> known_dims(const Graph& g, const std::string& name) {
  if (g.is_initializer(name)) return g.initializers.at(name).dims();
  const ValueInfo* v = g.value(name);
  if (!v || !v->shape || !shape_fully_known(*v->shape)) return std::nullopt;
  return dims_from_shape(*v->shape);
}

// Zero biases the optimizer removed from a Gemm: aten.linear(x, W, b) and
// aten.addmm(b, x, W) become Gemm(x, W, b), and onnxscript drops C when it
// holds only zeros. Removing it changes nothing only when it is zero, so a
// Gemm without C whose FX node added a parameter the file no longer has gets
// that parameter back as zeros, under its state_dict name, and trains it.
void restore_dropped_biases(Model& model, const TorchSignature& sig, std::vector<std::string>& done) {
  Graph& g = model.graph;
  const std::set<std::string> folded_sources = fold_sources(g);
  std::vector<std::string> restored;
  for (Node& n : g.nodes) {
    if (n.op_type != "Gemm" || !n.domain.empty() || n.has_input(2) || n.inputs.size() < 2) continue;
    std::optional<FxCall> call = fx_call(n);
    if (!call) continue;
    std::string bias;
    if (call->target == "torch.ops.aten.linear.default" && call->args.size() == 3) bias = call->args[2];
    if (call->target == "torch.ops.aten.addmm.default" && call->args.size() == 3) bias = call->args[0];
    if (bias.size() < 2 || bias[0] != '%') continue;
    const TorchSignature::Entry* e = sig.by_placeholder(bias.substr(1));
    if (!e || e->kind != "PARAMETER" || folded_sources.count(e->target)) continue;
    std::optional<Dims> b = known_dims(g, n.inputs[1]);
    if (!b || b->size() != 2) continue;
    const int64_t out = n.attr_int("transB", 0) ? (*b)[0] : (*b)[1];
    if (!g.is_initializer(e->target)) {
      const ValueInfo* w = g.value(n.inputs[1]);
      DType dtype = g.is_initializer(n.inputs[1]) ? g.initializers.at(n.inputs[1]).dtype() : (w ? w->dtype : DType::kFloat);
      g.initializers[e->target] = Tensor::host(dtype, {out});
      g.initializer_order.push_back(e->target);
      ValueInfo info;
      info.name = e->target;
      info.dtype = dtype;
      info.shape = shape_from_dims({out});
      info.metadata = {{kKindKey, e->kind}};
      g.values[e->target] = std::move(info);
      restored.push_back(e->target);
    } else if (g.initializers.at(e->target).dims() != Dims{out}) {
      continue;  // a parameter of another size: not this Gemm's bias
    }
    n.inputs.resize(3);
    n.inputs[2] = e->target;
  }
  if (restored.empty()) return;
  std::string list;
  for (const std::string& t : restored) list += (list.empty() ? "" : ", ") + t;
  done.push_back(fmt::format("{} zero bias(es) the optimizer removed from Gemms are back, as zeros: {}",
                             restored.size(), list));
}

}  // namespace

const TorchSignature::Entry* TorchSignature::by_target(const std::string& target) const {
  for (const Entry& e : inputs)
    if (e.target == target) return &e;
  return nullptr;
}

const TorchSignature::Entry* TorchSignature::by_placeholder(const std::string& placeholder) const {
  for (const Entry& e : inputs)
    if (e.placeholder == placeholder) return &e;
  return nullptr;
}

std::optional<TorchSignature> torch_signature(const Graph& g) {
  const std::string& text = metadata_value(g.metadata, kSignatureKey);
  if (text.empty()) return std::nullopt;
  TorchSignature sig;
  bool in_inputs = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() + 1 : end + 1;
    if (line.rfind("# ", 0) == 0) {
      in_inputs = line == "# inputs";
      continue;
    }
    if (!in_inputs) continue;
    if (auto e = parse_entry(line)) sig.inputs.push_back(std::move(*e));
  }
  return sig;
}

std::string initializer_kind(const Graph& g, const std::string& name) {
  const ValueInfo* v = g.value(name);
  return v ? metadata_value(v->metadata, kKindKey) : "";
}

std::vector<std::string> folded_from(const Graph& g, const std::string& name) {
  const ValueInfo* v = g.value(name);
  return v ? parse_name_list(metadata_value(v->metadata, kFoldedKey)) : std::vector<std::string>{};
}

std::vector<std::string> fx_placeholders(const Node& n) {
  const std::string& fx = metadata_value(n.metadata, kFxNodeKey);
  std::vector<std::string> names;
  size_t args = fx.find("](args = ");
  if (args == std::string::npos) return names;
  for (size_t i = fx.find('%', args); i != std::string::npos; i = fx.find('%', i + 1)) {
    size_t end = i + 1;
    while (end < fx.size() && (std::isalnum(static_cast<unsigned char>(fx[end])) || fx[end] == '_')) ++end;
    std::string name = fx.substr(i + 1, end - i - 1);
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::vector<std::string> undo_exporter_folds(Model& model) {
  std::vector<std::string> done;
  std::optional<TorchSignature> sig = torch_signature(model.graph);
  if (!sig) return done;
  unmerge(model, *sig, done);
  restore_dropped_biases(model, *sig, done);
  unfold_copies(model, done);
  return done;
}

}  // namespace ort_train
