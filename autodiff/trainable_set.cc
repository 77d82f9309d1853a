#include "autodiff/trainable_set.h"


#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "graph/dynamo_export.h"
#include "graph/glob.h"
#include "graph/mapped_external_data.h"

namespace ort_train {
namespace {

// No trained weight reaches this magnitude; today's masks hold -inf or
// finfo(float32).min (-3.4e38). Older masks of -1e4 or -1e9 are values a
// weight could hold: the graph signature or the description decides those.
constexpr double kMaskMagnitude = 1e30;

bool is_float(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16;
}

// "" when every value is finite and below the mask magnitude; else what it holds.
template <typename T>
std::string mask_values(const T* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double x = static_cast<double>(v[i]);
    if (std::isnan(x)) return "holds NaN";
    if (std::isinf(x)) return x < 0 ? "holds -inf (a mask)" : "holds inf";
    if (std::abs(x) >= kMaskMagnitude) return fmt::format("holds {:g} (a mask value such as finfo.min)", x);
  }
  return "";
}

std::string scanned_mask_values(const Tensor& t) {
  if (t.numel() == 0 || !t.storage()) return "";
  if (t.dtype() == DType::kFloat) return mask_values(t.data<float>(), t.numel());
  if (t.dtype() == DType::kDouble) return mask_values(t.data<double>(), t.numel());
  std::vector<double> v = t.to_double_vector();  // 16-bit: widened
  return mask_values(v.data(), static_cast<int64_t>(v.size()));
}

// A weight still in its file (graph/mapped_external_data.h) is scanned in a
// copy read for the purpose: read through its mapping, every frozen weight of
// a 16-bit fine-tune would sit in memory in float32 until folded. A file that
// cannot be read now is reported when the weight is read in.
std::string mask_values(const Tensor& t) {
  auto values = readable(t);
  return values.ok() ? scanned_mask_values(*values) : "";
}

struct Evidence {
  const Graph& g;
  std::optional<TorchSignature> sig;
  std::map<std::string, int> folds_of;       // value -> how many folded initializers name it
  std::set<std::string> read_in_pytorch;     // every placeholder some node's FX node read

  std::string kind(const std::string& name) const {
    std::string k = initializer_kind(g, name);
    if (k.empty() && sig)
      if (const TorchSignature::Entry* e = sig->by_target(name)) k = e->kind;
    return k;
  }
  // Every node reading `value` came from an FX node that read `placeholder`
  // itself: the fold happened inside one PyTorch op's translation (linear's
  // Wᵀ), a change of layout, not a function of the parameter the model applies (exp, a slice).
  bool read_inside_its_op(const std::string& value, const std::string& placeholder) const {
    bool any = false;
    for (const Node& n : g.nodes)
      if (std::find(n.inputs.begin(), n.inputs.end(), value) != n.inputs.end()) {
        std::vector<std::string> read = fx_placeholders(n);
        if (std::find(read.begin(), read.end(), placeholder) == read.end()) return false;
        any = true;
      }
    return any;
  }
};

// The default for one finite float initializer of a file with the exporter's metadata.
InitializerChoice by_signature(const Evidence& e, const std::string& name) {
  InitializerChoice c{name};
  std::string kind = e.kind(name);
  if (!kind.empty()) {
    c.trains = kind == "PARAMETER";
    if (!c.trains) c.reason = fmt::format("a {} in the graph signature", kind == "BUFFER" ? "buffer" : kind);
    return c;
  }
  std::vector<std::string> from = folded_from(e.g, name);
  if (from.empty()) {
    c.reason = "a constant the exporter made";
    return c;
  }
  std::vector<std::string> params;
  for (const std::string& f : from)
    if (e.kind(f) == "PARAMETER" || (!e.sig && f.find('.') != std::string::npos)) params.push_back(f);
  if (params.empty()) {
    c.reason = "folded from buffers and constants";
    return c;
  }
  const TorchSignature::Entry* p = e.sig ? e.sig->by_target(from[0]) : nullptr;
  if (from.size() == 1 && p && !e.g.is_initializer(from[0]) && e.folds_of.at(from[0]) == 1 &&
      e.read_inside_its_op(name, p->placeholder)) {
    c.trains = true;
    c.reason = "a parameter in the layout one PyTorch op reads it (folded)";
    c.source = from[0];
    return c;
  }
  c.reason = "undecided";
  std::string list;
  for (const std::string& f : from) list += (list.empty() ? "" : ", ") + f;
  c.source = list;
  return c;
}

// Parameters of the graph signature that some node read in PyTorch but the
// file holds neither as themselves nor as a fold: removed (a zero bias the
// optimizer dropped) or merged into another initializer where the file cannot tell.
std::vector<std::string> merged_parameters(const Evidence& e) {
  std::vector<std::string> merged;
  if (!e.sig) return merged;
  for (const TorchSignature::Entry& p : e.sig->inputs)
    if (p.kind == "PARAMETER" && !e.g.is_initializer(p.target) && !e.folds_of.count(p.target) &&
        e.read_in_pytorch.count(p.placeholder))
      merged.push_back(p.target);
  return merged;
}

}  // namespace

Result<TrainableSet> choose_trainable(const Model& model, const TrainableConfig& config) {
  const Graph& g = model.graph;
  Evidence e{g, torch_signature(g), {}, {}};
  for (const std::string& name : g.initializer_order)
    for (const std::string& f : folded_from(g, name)) ++e.folds_of[f];
  for (const Node& n : g.nodes)
    for (const std::string& p : fx_placeholders(n)) e.read_in_pytorch.insert(p);
  TrainableSet set;
  set.graph_signature = e.sig.has_value() || std::any_of(g.initializer_order.begin(), g.initializer_order.end(),
                                                         [&](const std::string& n) { return !e.kind(n).empty(); });
  if (std::vector<std::string> merged = merged_parameters(e); !merged.empty()) {
    std::string list;
    for (size_t i = 0; i < merged.size() && i < 8; ++i) list += (i ? ", " : "") + merged[i];
    if (merged.size() > 8) list += fmt::format(", and {} more", merged.size() - 8);
    return invalid_argument(
        "the exporter's optimizer removed {} parameter(s) from the file, or merged them into other initializers of "
        "equal value without a record of which nodes read which: {}. PyTorch trains each of them (a zero bias "
        "the optimizer dropped, BatchNorm folded into a convolution); this file cannot. Export with "
        "torch.onnx.export(..., optimize=False) or tools/export_for_training.py",
        merged.size(), list);
  }

  std::vector<bool> included(config.include.size(), false), excluded(config.exclude.size(), false);
  std::vector<bool> only_used(config.only ? config.only->size() : 0, false);
  std::vector<InitializerChoice> undecided;
  for (const std::string& name : g.initializer_order) {
    const Tensor& t = g.initializers.at(name);
    if (!is_float(t.dtype())) continue;
    InitializerChoice c{name};
    std::string values = mask_values(t);
    if (!values.empty()) c.reason = values;
    else if (set.graph_signature) c = by_signature(e, name);
    else c.trains = true;
    bool notable = !c.reason.empty() || !c.source.empty();
    for (size_t i = 0; i < config.include.size(); ++i)
      if (glob_match(config.include[i], name)) {
        if (!values.empty())
          return invalid_argument("trainable.include '{}' names '{}', which {}: it cannot train", config.include[i],
                                  name, values);
        included[i] = true;
        if (!c.trains || c.reason == "undecided") c = {name, true, "trainable.include", c.source};
        notable = true;
      }
    for (size_t i = 0; i < config.exclude.size(); ++i)
      if (glob_match(config.exclude[i], name)) {
        excluded[i] = true;
        c = {name, false, "trainable.exclude", c.reason == "undecided" ? "" : c.source};
        notable = true;
      }
    if (config.only) {
      bool listed = false;
      for (size_t i = 0; i < config.only->size(); ++i)
        if (glob_match((*config.only)[i], name)) listed = only_used[i] = true;
      // A parameter (or one the file cannot decide) is frozen for lora:; a
      // mask or a buffer keeps its own reason.
      if (!listed && (c.trains || c.reason == "undecided")) {
        c = {name, false, std::string(kFrozenByLora), c.reason == "undecided" ? "" : c.source};
        notable = true;
      }
    }
    if (c.reason == "undecided") {
      undecided.push_back(c);
      continue;
    }
    (c.trains ? set.trainable : set.frozen).push_back(name);
    if (notable) set.notable.push_back(std::move(c));
  }
  if (!undecided.empty()) {
    std::string list;
    for (const InitializerChoice& c : undecided) list += fmt::format("\n  '{}', folded from {}", c.name, c.source);
    return invalid_argument(
        "the exporter's optimizer folded parameters into {} initializer(s) in a way the file cannot undo:{}\n"
        "PyTorch trains the parameter itself; trained as tensors of their own these would not train as it does (a "
        "row gathered or expanded into several copies trains once per copy). Export with "
        "torch.onnx.export(..., optimize=False) or tools/export_for_training.py, which keep parameters as "
        "parameters; or settle each in the description: trainable: {{exclude: [...]}} to freeze it, "
        "trainable: {{include: [...]}} to train it as a tensor of its own",
        undecided.size(), list);
  }
  for (size_t i = 0; i < only_used.size(); ++i)
    if (!only_used[i])
      return invalid_argument("lora.train_also '{}' matches no floating-point initializer of the model",
                              (*config.only)[i]);
  for (size_t i = 0; i < config.include.size(); ++i)
    if (!included[i]) set.unused_globs.push_back(config.include[i]);
  for (size_t i = 0; i < config.exclude.size(); ++i)
    if (!excluded[i]) set.unused_globs.push_back(config.exclude[i]);
  return set;
}

std::vector<std::string> describe_choices(const TrainableSet& set, size_t max_names) {
  // Reasons in first-seen order, each with its names.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const InitializerChoice& c : set.notable) {
    std::string key = fmt::format("{}: {}", c.trains ? "trains" : "frozen", c.reason.empty() ? "a parameter" : c.reason);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(c.source.empty() ? c.name : fmt::format("{} (= {})", c.name, c.source));
  }
  std::vector<std::string> lines;
  for (const auto& [key, names] : groups) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < max_names; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > max_names) list += fmt::format(", and {} more", names.size() - max_names);
    lines.push_back(fmt::format("{} ({}): {}", key, names.size(), list));
  }
  return lines;
}

}  // namespace ort_train
