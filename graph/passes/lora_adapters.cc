// The lora_adapters pass (graph/passes/lora_adapters.h): finds the weights
// the description's lora.targets name, checks each is read in one of the
// forms an adapter fits, and adds A, B and the low-rank path beside it.
#include "graph/passes/lora_adapters.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "graph/glob.h"
#include "graph/passes/fresh_names.h"
#include "graph/passes/pass.h"
#include "graph/stable_hash.h"

namespace ort_train {

Tensor lora_a_init(int64_t in, int64_t rank, uint64_t seed, const std::string& module) {
  // splitmix64 over (seed, name, index): the same values on every platform
  // and standard library (std::uniform_real_distribution is not specified
  // bit for bit).
  const uint64_t base = fnv1a64_update(fnv1a64(module.data(), module.size()), &seed, sizeof seed);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  Tensor a = Tensor::host(DType::kFloat, {in, rank});
  float* p = a.data<float>();
  for (int64_t r = 0; r < rank; ++r)
    for (int64_t i = 0; i < in; ++i) {
      uint64_t z = base + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(r * in + i + 1);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      const double u = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
      p[i * rank + r] = static_cast<float>((2 * u - 1) * bound);  // lora_A[r][i], stored transposed
    }
  return a;
}

Tensor lora_delta(const LoraAdapter& ad, const Tensor& a, const Tensor& b, double scale) {
  const int64_t rank = a.dim(1);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  Dims dims = ad.layout == LoraLayout::kInOut   ? Dims{ad.in, ad.out}
              : ad.layout == LoraLayout::kOutIn ? Dims{ad.out, ad.in}
                                                : Dims{ad.out, ad.in, 1, 1};
  Tensor d = Tensor::host(DType::kFloat, dims);
  float* pd = d.data<float>();
  for (int64_t i = 0; i < ad.in; ++i)
    for (int64_t o = 0; o < ad.out; ++o) {
      double s = 0;
      for (int64_t r = 0; r < rank; ++r) s += static_cast<double>(pa[i * rank + r]) * pb[r * ad.out + o];
      const int64_t at = ad.layout == LoraLayout::kInOut ? i * ad.out + o : o * ad.in + i;
      pd[at] = static_cast<float>(scale * s);
    }
  return d;
}

namespace {

// Where one weight is read, and whether an adapter fits there.
struct Site {
  std::string weight;
  size_t node = 0;  // the MatMul, Gemm or Conv
  LoraLayout layout = LoraLayout::kInOut;
  int64_t in = 0, out = 0;
  std::string why_not;  // empty: an adapter fits
  std::string module;   // LoraAdapter::module
};

std::string module_name(const Graph& g, const Site& s, const LoraSettings& settings) {
  auto it = settings.parameter_names.find(s.weight);
  std::string name = it != settings.parameter_names.end() ? it->second : s.weight;
  const std::string suffix = ".weight";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  // TorchScript names a folded Wᵀ "onnx::MatMul_12"; its node keeps the module's scope.
  const std::string& scope = g.nodes[s.node].name;
  if (name.rfind("onnx::", 0) == 0 && scope.size() > 1 && scope[0] == '/') {
    std::string path = scope.substr(1, scope.rfind('/') - 1);
    std::replace(path.begin(), path.end(), '/', '.');
    if (!path.empty()) return path;
  }
  return name;
}

// Every initializer a MatMul, Gemm or Conv reads as its weight, and whether
// an adapter fits it.
std::vector<Site> weight_sites(const Graph& g) {
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> readers;  // value -> (node, input)
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (size_t i = 0; i < g.nodes[k].inputs.size(); ++i) readers[g.nodes[k].inputs[i]].push_back({k, i});
  auto is_output = [&](const std::string& v) {
    return std::any_of(g.outputs.begin(), g.outputs.end(), [&](const ValueInfo& o) { return o.name == v; });
  };
  std::vector<Site> sites;
  for (const std::string& w : g.initializer_order) {
    auto rd = readers.find(w);
    if (rd == readers.end()) continue;
    const Tensor& t = g.initializers.at(w);
    // Shape and Size read no values: the weight stays as it is beside its adapter.
    std::vector<std::pair<size_t, size_t>> uses;
    for (auto u : rd->second)
      if (g.nodes[u.first].op_type != "Shape" && g.nodes[u.first].op_type != "Size") uses.push_back(u);
    Site s{w};
    bool weight_use = false;
    for (auto [k, i] : uses) {
      const Node& n = g.nodes[k];
      if (!n.domain.empty()) continue;
      // A bias (Gemm's C, Conv's B) is no weight; a MatMul's first operand is, in the wrong place.
      const bool gemm_like = ((n.op_type == "MatMul" || n.op_type == "Gemm") && i <= 1) || (n.op_type == "Conv" && i == 1);
      bool transposed_into_matmul = false;
      if (n.op_type == "Transpose" && t.rank() == 2) {
        auto tr = readers.find(n.outputs[0]);
        transposed_into_matmul = tr != readers.end() && std::any_of(tr->second.begin(), tr->second.end(), [&](auto u) {
                                   return g.nodes[u.first].op_type == "MatMul";
                                 });
      }
      if (!gemm_like && !transposed_into_matmul) continue;
      weight_use = true;
      s.node = k;
      if (uses.size() > 1) {
        s.why_not = fmt::format("is read by {} nodes (an adapter belongs to one layer)", uses.size());
      } else if (transposed_into_matmul) {
        const auto& tr = readers.at(n.outputs[0]);
        const std::vector<int64_t> perm = n.attr_ints("perm", {1, 0});
        if (perm != std::vector<int64_t>{1, 0}) s.why_not = "reaches its MatMul through a Transpose that is not [1, 0]";
        else if (tr.size() != 1 || tr[0].second != 1 || is_output(n.outputs[0]))
          s.why_not = "is transposed for more than the second operand of one MatMul";
        else {
          s.node = tr[0].first;
          s.layout = LoraLayout::kOutIn;
          s.out = t.dim(0), s.in = t.dim(1);
        }
      } else if (i != 1) {
        s.why_not = fmt::format("is the first operand of {}", n.describe());
      } else if (n.op_type == "MatMul") {
        if (t.rank() != 2) s.why_not = fmt::format("has {} dims (a MatMul weight of 2 is adapted)", t.rank());
        else s.in = t.dim(0), s.out = t.dim(1);
      } else if (n.op_type == "Gemm") {
        if (n.attr_int("transA", 0) != 0) s.why_not = "is read by a Gemm with transA";
        else if (n.attr_int("transB", 0) != 0) s.layout = LoraLayout::kOutIn, s.out = t.dim(0), s.in = t.dim(1);
        else s.in = t.dim(0), s.out = t.dim(1);
      } else {  // Conv
        if (t.rank() != 4 || t.dim(2) != 1 || t.dim(3) != 1)
          s.why_not = fmt::format("is a {} convolution kernel (only 1x1 ones are adapted)", dims_to_string(t.dims()));
        else if (n.attr_int("group", 1) != 1) s.why_not = "is a grouped convolution's kernel";
        else s.layout = LoraLayout::kConv1x1, s.out = t.dim(0), s.in = t.dim(1);
      }
      if (s.why_not.empty() && t.dtype() != DType::kFloat)
        s.why_not = fmt::format("is {}: adapters train beside float32 weights (--precision bf16|fp16 lowers the "
                                "GEMMs' precision)", dtype_name(t.dtype()));
      break;
    }
    if (weight_use) sites.push_back(s);
  }
  return sites;
}

// The candidates nearest a glob that matched none: most of its words in common.
std::string near_names(const std::string& glob, const std::vector<std::string>& names) {
  std::vector<std::string> words;
  std::string word;
  for (char c : glob + "*") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
    } else {
      if (word.size() > 1) words.push_back(word);
      word.clear();
    }
  }
  std::vector<std::pair<int, std::string>> scored;
  for (const std::string& n : names) {
    int score = 0;
    for (const std::string& w : words) score += n.find(w) != std::string::npos;
    scored.push_back({-score, n});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::string out;
  for (size_t i = 0; i < scored.size() && i < 6; ++i) out += (i ? ", " : "") + scored[i].second;
  if (scored.size() > 6) out += fmt::format(", ... ({} in all)", scored.size());
  return out.empty() ? "none: the model has no MatMul, Gemm or 1x1 Conv weight" : out;
}

class LoraAdapters : public Pass {
 public:
  std::string name() const override { return "lora_adapters"; }
  PassOrder order() const override { return {.phases = kAdapterPhase, .required = true}; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    if (ctx.lora == nullptr || !ctx.lora->adapters.empty()) return false;
    LoraPlan& plan = *ctx.lora;
    Graph& g = model.graph;
    ASSIGN_OR_RETURN(std::vector<Site> chosen, choose(g, plan.settings));
    FreshNames fresh(g);
    std::map<size_t, std::vector<Node>> after;  // base node -> the adapter's nodes
    for (const Site& s : chosen) {
      LoraAdapter ad{s.weight, s.module};
      ad.in = s.in, ad.out = s.out, ad.layout = s.layout;
      ad.a = fresh(ad.module + ".lora_A");
      ad.b = fresh(ad.module + ".lora_B");
      add_initializer(g, ad.a, lora_a_init(s.in, plan.settings.rank, plan.settings.seed, ad.module));
      add_initializer(g, ad.b, Tensor::host(DType::kFloat, {plan.settings.rank, s.out}));
      std::vector<Node> nodes = adapter_nodes(g, g.nodes[s.node], ad, plan.settings, fresh);
      ctx.count(static_cast<int64_t>(nodes.size()) + 2);
      ctx.note(fmt::format("{}: A {} x B {} beside {}", ad.weight, dims_to_string({s.in, plan.settings.rank}),
                           dims_to_string({plan.settings.rank, s.out}), g.nodes[s.node].describe()));
      auto& list = after[s.node];
      list.insert(list.end(), nodes.begin(), nodes.end());
      plan.adapters.push_back(std::move(ad));
    }
    if (chosen.empty()) return false;
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size() + chosen.size() * 6);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      nodes.push_back(std::move(g.nodes[k]));
      if (auto it = after.find(k); it != after.end())
        for (Node& n : it->second) nodes.push_back(std::move(n));
    }
    g.nodes = std::move(nodes);
    return true;
  }

 private:
  // The sites the globs match; an error for a glob that matches none, and for
  // every matched weight an adapter cannot fit.
  static Result<std::vector<Site>> choose(const Graph& g, const LoraSettings& settings) {
    std::vector<Site> sites = weight_sites(g);
    std::vector<std::string> names;  // what a glob may match, for the near-names list
    for (Site& s : sites) {
      s.module = module_name(g, s, settings);
      names.push_back(s.module + ".weight");
    }
    std::vector<bool> picked(sites.size(), false);
    std::vector<std::string> refused;
    for (const std::string& glob : settings.targets) {
      bool any = false;
      for (size_t i = 0; i < sites.size(); ++i) {
        const Site& s = sites[i];
        auto pn = settings.parameter_names.find(s.weight);
        if (!glob_match(glob, s.weight) && !glob_match(glob, names[i]) && !glob_match(glob, s.module) &&
            !(pn != settings.parameter_names.end() && glob_match(glob, pn->second)))
          continue;
        any = true;
        if (!s.why_not.empty()) refused.push_back(fmt::format("'{}' (lora.targets '{}') {}", s.weight, glob, s.why_not));
        else picked[i] = true;
      }
      if (!any)
        return invalid_argument("lora.targets '{}' matches no weight of a MatMul, Gemm or 1x1 Conv; the nearest: {}",
                                glob, near_names(glob, names));
    }
    if (!refused.empty()) {
      std::string list;
      for (const std::string& r : refused) list += "\n  " + r;
      return invalid_argument("lora.targets match {} weight(s) no adapter fits:{}\nnarrow the globs to the "
                              "projections to adapt", refused.size(), list);
    }
    // In the graph's initializer order (the sites'), whatever the globs' order:
    // names and init do not depend on it.
    std::vector<Site> chosen;
    for (size_t i = 0; i < sites.size(); ++i)
      if (picked[i]) chosen.push_back(sites[i]);
    // PEFT keys adapters by module: two weights of one module would write one key twice.
    std::map<std::string, std::string> by_module;
    for (const Site& s : chosen) {
      auto [it, fresh] = by_module.emplace(s.module, s.weight);
      if (!fresh)
        return invalid_argument("lora.targets match '{}' and '{}', which both belong to module '{}': PEFT's layout "
                                "holds one adapter per module; target one of them",
                                it->second, s.weight, it->first);
    }
    return chosen;
  }

  static void add_initializer(Graph& g, const std::string& name, Tensor t) {
    ValueInfo info{name, t.dtype(), shape_from_dims(t.dims())};
    g.values[name] = info;
    g.initializers[name] = std::move(t);
    g.initializer_order.push_back(name);
  }

  // dropout(X) A B * scale added to the base node's output, which is renamed
  // so that its readers and the graph's outputs read the sum.
  static std::vector<Node> adapter_nodes(Graph& g, Node& base, const LoraAdapter& ad, const LoraSettings& settings,
                                         FreshNames& fresh) {
    std::vector<Node> nodes;
    const std::string& prefix = ad.module + "/lora";
    auto node = [&](const std::string& op, std::vector<std::string> inputs, const std::string& out_base,
                    std::vector<Attribute> attrs = {}) {
      Node n;
      n.name = fresh(prefix + "/" + op);
      n.op_type = op;
      n.inputs = std::move(inputs);
      n.outputs = {fresh(out_base)};
      n.attributes = std::move(attrs);
      nodes.push_back(n);
      return n.outputs[0];
    };
    auto constant = [&](const std::string& base_name, Tensor t) {
      std::string name = fresh(base_name);
      add_initializer(g, name, std::move(t));
      return name;
    };
    std::string x = base.inputs[0];
    if (settings.dropout > 0) {
      Tensor on = Tensor::host(DType::kBool, {});
      on.data<bool>()[0] = true;
      x = node("Dropout",
               {x, constant(ad.module + ".lora_dropout_ratio", Tensor::scalar_f32(static_cast<float>(settings.dropout))),
                constant(ad.module + ".lora_training", on)},
               ad.module + ".lora_dropout");
    }
    double scale = settings.scale();
    std::string low;
    if (ad.layout == LoraLayout::kConv1x1) {
      // Conv kernels [rank, in, 1, 1] and [out, rank, 1, 1] from A and B.
      auto kernel = [&](const std::string& m, int64_t rows, int64_t cols) {
        std::string t = node("Transpose", {m}, m + "_t", {Attribute::make_ints("perm", {1, 0})});
        return node("Reshape", {t, constant(m + "_kernel_shape", Tensor::from_vector<int64_t>({4}, {rows, cols, 1, 1}))},
                    m + "_kernel");
      };
      std::vector<Attribute> first;
      for (const char* k : {"strides", "pads", "auto_pad", "dilations"})
        if (const Attribute* a = base.attr(k)) first.push_back(*a);
      std::string h = node("Conv", {x, kernel(ad.a, settings.rank, ad.in)}, ad.module + ".lora_A_out", first);
      low = node("Conv", {h, kernel(ad.b, ad.out, settings.rank)}, ad.module + ".lora_B_out");
    } else {
      std::string h = node("MatMul", {x, ad.a}, ad.module + ".lora_A_out");
      low = node("MatMul", {h, ad.b}, ad.module + ".lora_B_out");
      if (base.op_type == "Gemm") scale *= base.attr_float("alpha", 1.f);
    }
    std::string scaled =
        node("Mul", {low, constant(ad.module + ".lora_scale", Tensor::scalar_f32(static_cast<float>(scale)))},
             ad.module + ".lora_scaled");
    // The base output keeps its readers through the sum, which takes its name.
    const std::string y = base.outputs[0];
    const std::string y_base = fresh(y + "_base");
    base.outputs[0] = y_base;
    if (const ValueInfo* v = g.value(y)) {
      ValueInfo info = *v;
      info.name = y_base;
      g.values[y_base] = info;
    }
    Node sum;
    sum.name = fresh(prefix + "/Add");
    sum.op_type = "Add";
    sum.inputs = {y_base, scaled};
    sum.outputs = {y};
    nodes.push_back(sum);
    return nodes;
  }
};

ORT_REGISTER_PASS(LoraAdapters);

}  // namespace
}  // namespace ort_train
