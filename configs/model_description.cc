#include "graph/onnx_io.h"
#include "configs/model_description.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace ort_train {
namespace fs = std::filesystem;
namespace {

// Errors name the file, the line and column of the offending node, and its
// key path: "bert.yaml:7:11: optimizer.betas: expected a list of two numbers".
struct Parser {
  std::string source;

  Status error(const YAML::Node& at, const std::string& key, const std::string& what) const {
    const YAML::Mark m = at.IsDefined() ? at.Mark() : YAML::Mark::null_mark();
    if (m.is_null()) return invalid_argument("{}: {}: {}", source, key, what);
    return invalid_argument("{}:{}:{}: {}: {}", source, m.line + 1, m.column + 1, key, what);
  }

  Status check_keys(const YAML::Node& map, const std::string& where, const std::set<std::string>& allowed) const {
    if (!map.IsMap()) return error(map, where.empty() ? "top level" : where, "expected a mapping");
    std::set<std::string> seen;
    for (const auto& kv : map) {
      // A null or collection key (`? [a, b]: 1`) is no key name.
      if (!kv.first.IsScalar()) return error(kv.first, where.empty() ? "top level" : where, "expected a key name");
      std::string k = kv.first.Scalar();
      // yaml-cpp keeps both and lookups find the first: a second one would be silently ignored.
      if (!seen.insert(k).second) return error(kv.first, where.empty() ? k : where + "." + k, "duplicate key");
      if (!allowed.count(k)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return error(kv.first, where.empty() ? k : where + "." + k, "unknown key (expected one of: " + list + ")");
      }
    }
    return Status::Ok();
  }

  template <typename T>
  Result<T> scalar(const YAML::Node& n, const std::string& key, const char* expected) const {
    if (!n.IsScalar()) return error(n, key, std::string("expected ") + expected);
    try {
      return n.as<T>();
    } catch (const YAML::Exception&) {
      return error(n, key, std::string("expected ") + expected + ", got '" + n.Scalar() + "'");
    }
  }
  // Every number a description holds is finite (YAML's .nan and .inf parse
  // as doubles): a NaN beta or an infinite lr_end trains to NaN weights.
  Result<double> number(const YAML::Node& n, const std::string& key) const {
    ASSIGN_OR_RETURN(double v, (scalar<double>(n, key, "a number")));
    if (!std::isfinite(v)) return error(n, key, "expected a finite number, got '" + n.Scalar() + "'");
    return v;
  }
  // A finite number in [lo, hi] (`hi_open`: below hi), with the range in the message.
  Result<double> number_in(const YAML::Node& n, const std::string& key, double lo, double hi, bool hi_open) const {
    ASSIGN_OR_RETURN(double v, number(n, key));
    if (v < lo || (hi_open ? v >= hi : v > hi))
      return error(n, key, fmt::format("expected a number in [{:g}, {:g}{}, got {:g}", lo, hi, hi_open ? ")" : "]", v));
    return v;
  }
  // The keys of a free-form mapping (dims, fill): names, each once.
  Status unique_names(const YAML::Node& map, const std::string& where, const char* what) const {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) return error(kv.first, where, std::string("expected ") + what);
      if (!seen.insert(kv.first.Scalar()).second) return error(kv.first, where + "." + kv.first.Scalar(), "duplicate key");
    }
    return Status::Ok();
  }
  Result<int64_t> integer(const YAML::Node& n, const std::string& key) const {
    return scalar<int64_t>(n, key, "an integer");
  }
  Result<int64_t> positive(const YAML::Node& n, const std::string& key) const {
    ASSIGN_OR_RETURN(int64_t v, integer(n, key));
    if (v <= 0) return error(n, key, "expected a positive integer, got " + std::to_string(v));
    return v;
  }
  Result<std::string> string(const YAML::Node& n, const std::string& key) const {
    return scalar<std::string>(n, key, "a string");
  }
  // A file or folder the description names. A description is its user's
  // configuration, like the command line: an absolute path (a cluster
  // config's /scratch/...) is taken as it is, a relative one from the
  // description's folder, `..` and links included, and the path returned is
  // the one opened. Paths inside files from others stay confined (external
  // data, graph/confined_path.h).
  Result<std::string> path(const YAML::Node& n, const std::string& key, const std::string& base_dir) const {
    ASSIGN_OR_RETURN(std::string p, string(n, key));
    if (p == "synthetic" && key.rfind("data", 0) == 0) return p;
    if (p.empty()) return error(n, key, "expected a path");
    if (base_dir.empty() || fs::path(p).is_absolute()) return p;
    return (fs::path(base_dir) / p).string();
  }
  Result<bool> boolean(const YAML::Node& n, const std::string& key) const {
    return scalar<bool>(n, key, "true or false");
  }
  Result<std::vector<std::string>> strings(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence()) return error(n, key, "expected a list of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < n.size(); ++i) {
      ASSIGN_OR_RETURN(std::string s, string(n[i], key + "[" + std::to_string(i) + "]"));
      out.push_back(s);
    }
    return out;
  }
  Result<std::pair<double, double>> pair(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence() || n.size() != 2) return error(n, key, "expected a list of two numbers");
    ASSIGN_OR_RETURN(double a, number(n[0], key + "[0]"));
    ASSIGN_OR_RETURN(double b, number(n[1], key + "[1]"));
    return std::make_pair(a, b);
  }

  Result<TokenDataConfig> tokens(const YAML::Node& n) const {
    const std::string key = "data.tokens";
    RETURN_IF_ERROR(check_keys(n, key, {"input_ids", "labels", "shift_labels", "fill", "dtype"}));
    TokenDataConfig t;
    if (n["input_ids"]) { ASSIGN_OR_RETURN(t.input_ids, string(n["input_ids"], key + ".input_ids")); }
    if (n["labels"]) { ASSIGN_OR_RETURN(t.labels, string(n["labels"], key + ".labels")); }
    if (n["shift_labels"]) { ASSIGN_OR_RETURN(t.shift_labels, boolean(n["shift_labels"], key + ".shift_labels")); }
    if (n["dtype"]) {
      ASSIGN_OR_RETURN(t.dtype, string(n["dtype"], key + ".dtype"));
      if (t.dtype != "uint16" && t.dtype != "uint32") return error(n["dtype"], key + ".dtype", "expected uint16 or uint32");
    }
    if (n["fill"]) {
      const YAML::Node& fill = n["fill"];
      if (!fill.IsMap()) return error(fill, key + ".fill", "expected a mapping of input name to value");
      RETURN_IF_ERROR(unique_names(fill, key + ".fill", "an input name"));
      for (const auto& kv : fill) {
        if (!kv.first.IsScalar()) return error(kv.first, key + ".fill", "expected an input name");
        ASSIGN_OR_RETURN(t.fill[kv.first.Scalar()], number(kv.second, key + ".fill." + kv.first.Scalar()));
      }
    }
    return t;
  }

  Result<TensorDecl> tensor(const YAML::Node& n, const std::string& key) const {
    RETURN_IF_ERROR(check_keys(n, key, {"name", "dtype", "shape", "range"}));
    TensorDecl t;
    if (!n["name"]) return error(n, key + ".name", "missing");
    ASSIGN_OR_RETURN(t.name, string(n["name"], key + ".name"));
    if (n["dtype"]) {
      ASSIGN_OR_RETURN(std::string d, string(n["dtype"], key + ".dtype"));
      auto dt = parse_dtype_name(d);
      if (!dt.ok()) return error(n["dtype"], key + ".dtype", dt.status().message());
      t.dtype = *dt;
    }
    if (n["shape"]) {
      const YAML::Node& s = n["shape"];
      if (!s.IsSequence()) return error(s, key + ".shape", "expected a list of sizes or dim names");
      for (size_t i = 0; i < s.size(); ++i) {
        std::string k = key + ".shape[" + std::to_string(i) + "]";
        if (!s[i].IsScalar()) return error(s[i], k, "expected a size or a dim name");
        const std::string& text = s[i].Scalar();
        bool numeric = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(c); });
        if (text.size() > 1 && text[0] == '-' &&
            std::all_of(text.begin() + 1, text.end(), [](char c) { return std::isdigit(c); }))
          return error(s[i], k, "size " + text + " is negative");
        if (numeric) {
          int64_t size = 0;
          auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
          if (ec != std::errc() || end != text.data() + text.size())
            return error(s[i], k, "size " + text + " is out of range");
          t.shape.emplace_back(size);
        } else {
          t.shape.emplace_back(text);
        }
      }
    }
    if (n["range"]) {
      ASSIGN_OR_RETURN(auto r, pair(n["range"], key + ".range"));
      if (!(r.first < r.second))
        return error(n["range"], key + ".range", fmt::format("[{:g}, {:g}] is empty: the low end must be below the high end",
                                                             r.first, r.second));
      t.range = r;
    }
    return t;
  }

  Result<std::vector<TensorDecl>> tensors(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence()) return error(n, key, "expected a list of {name, dtype, shape}");
    std::vector<TensorDecl> out;
    for (size_t i = 0; i < n.size(); ++i) {
      ASSIGN_OR_RETURN(TensorDecl t, tensor(n[i], key + "[" + std::to_string(i) + "]"));
      out.push_back(t);
    }
    return out;
  }

  Result<LossSpec> loss(const YAML::Node& n) const {
    RETURN_IF_ERROR(check_keys(n, "loss", {"output", "type", "input", "target", "reduction", "ignore_index"}));
    LossSpec s;
    if (n["output"]) { ASSIGN_OR_RETURN(s.output, string(n["output"], "loss.output")); }
    if (n["type"]) { ASSIGN_OR_RETURN(s.type, string(n["type"], "loss.type")); }
    if (s.output.empty() == s.type.empty()) return error(n, "loss", "give exactly one of `output` (the model's own loss) or `type`");
    if (!s.output.empty()) {
      for (const char* k : {"input", "target", "reduction", "ignore_index"})
        if (n[k]) return error(n[k], std::string("loss.") + k, "only applies with `type`, not with `output`");
      return s;
    }
    static const std::set<std::string> kTypes{"softmax_cross_entropy", "nll", "mse", "l1", "bce_with_logits"};
    if (!kTypes.count(s.type)) return error(n["type"], "loss.type", "'" + s.type + "' is not one of: " + loss_types());
    if (!n["input"]) return error(n, "loss.input", "missing (the model output the loss reads)");
    if (!n["target"]) return error(n, "loss.target", "missing (the label tensor)");
    ASSIGN_OR_RETURN(s.input, string(n["input"], "loss.input"));
    ASSIGN_OR_RETURN(s.target, string(n["target"], "loss.target"));
    if (n["reduction"]) {
      ASSIGN_OR_RETURN(s.reduction, string(n["reduction"], "loss.reduction"));
      if (s.reduction != "mean" && s.reduction != "sum")
        return error(n["reduction"], "loss.reduction", "'" + s.reduction + "' is not one of: mean, sum");
    }
    if (n["ignore_index"]) {
      if (s.type != "softmax_cross_entropy" && s.type != "nll")
        return error(n["ignore_index"], "loss.ignore_index", "only applies to softmax_cross_entropy and nll");
      ASSIGN_OR_RETURN(s.ignore_index, integer(n["ignore_index"], "loss.ignore_index"));
    }
    return s;
  }

  Result<OptimizerConfig> optimizer(const YAML::Node& n) const {
    RETURN_IF_ERROR(check_keys(n, "optimizer", {"name", "lr", "betas", "eps", "weight_decay", "no_decay", "momentum",
                                                "mode", "max_grad_norm", "ratio_min", "ratio_max"}));
    OptimizerConfig o;
    if (n["name"]) {
      ASSIGN_OR_RETURN(std::string name, string(n["name"], "optimizer.name"));
      auto norm = normalize_optimizer(name);
      if (!norm) return error(n["name"], "optimizer.name", "'" + name + "' is not one of: Sgd, Adam, AdamW, Lamb");
      o.name = *norm;
    }
    // The ranges torch.optim checks (lr, eps, weight_decay, momentum >= 0;
    // 0 <= beta < 1); a clip norm and LAMB's ratio bounds are positive.
    constexpr double kMax = std::numeric_limits<double>::max();
    auto opt_number = [&](const char* k, std::optional<double>& field, double lo) -> Status {
      if (!n[k]) return Status::Ok();
      ASSIGN_OR_RETURN(double v, number_in(n[k], std::string("optimizer.") + k, lo, kMax, false));
      field = v;
      return Status::Ok();
    };
    RETURN_IF_ERROR(opt_number("lr", o.lr, 0));
    RETURN_IF_ERROR(opt_number("eps", o.eps, 0));
    RETURN_IF_ERROR(opt_number("weight_decay", o.weight_decay, 0));
    RETURN_IF_ERROR(opt_number("momentum", o.momentum, 0));
    RETURN_IF_ERROR(opt_number("max_grad_norm", o.max_grad_norm, std::numeric_limits<double>::min()));
    RETURN_IF_ERROR(opt_number("ratio_min", o.ratio_min, 0));
    RETURN_IF_ERROR(opt_number("ratio_max", o.ratio_max, std::numeric_limits<double>::min()));
    if (o.ratio_min && o.ratio_max && *o.ratio_min > *o.ratio_max)
      return error(n["ratio_min"], "optimizer.ratio_min", "is above optimizer.ratio_max");
    if (n["betas"]) {
      ASSIGN_OR_RETURN(auto b, pair(n["betas"], "optimizer.betas"));
      ASSIGN_OR_RETURN(b.first, number_in(n["betas"][0], "optimizer.betas[0]", 0, 1, true));
      ASSIGN_OR_RETURN(b.second, number_in(n["betas"][1], "optimizer.betas[1]", 0, 1, true));
      o.betas = b;
    }
    if (n["no_decay"]) { ASSIGN_OR_RETURN(o.no_decay, strings(n["no_decay"], "optimizer.no_decay")); }
    if (n["mode"]) {
      ASSIGN_OR_RETURN(o.mode, string(n["mode"], "optimizer.mode"));
      if (o.mode != "torch" && o.mode != "huggingface")
        return error(n["mode"], "optimizer.mode", "'" + o.mode + "' is not one of: torch, huggingface");
    }
    return o;
  }

  Result<ScheduleConfig> schedule(const YAML::Node& n) const {
    RETURN_IF_ERROR(check_keys(n, "schedule", {"type", "warmup_steps", "total_steps", "power", "lr_end", "num_cycles"}));
    ScheduleConfig s;
    if (n["type"]) {
      ASSIGN_OR_RETURN(s.type, string(n["type"], "schedule.type"));
      if (s.type != "constant" && s.type != "linear" && s.type != "cosine" && s.type != "poly")
        return error(n["type"], "schedule.type", "'" + s.type + "' is not one of: constant, linear, cosine, poly");
    }
    if (n["warmup_steps"]) {
      ASSIGN_OR_RETURN(s.warmup_steps, integer(n["warmup_steps"], "schedule.warmup_steps"));
      if (s.warmup_steps < 0) return error(n["warmup_steps"], "schedule.warmup_steps", "must not be negative");
    }
    if (n["total_steps"]) { ASSIGN_OR_RETURN(s.total_steps, positive(n["total_steps"], "schedule.total_steps")); }
    constexpr double kMax = std::numeric_limits<double>::max();
    if (n["power"]) { ASSIGN_OR_RETURN(s.power, number_in(n["power"], "schedule.power", 0, kMax, false)); }
    if (n["lr_end"]) { ASSIGN_OR_RETURN(s.lr_end, number_in(n["lr_end"], "schedule.lr_end", 0, kMax, false)); }
    if (n["num_cycles"]) {
      ASSIGN_OR_RETURN(s.num_cycles, number_in(n["num_cycles"], "schedule.num_cycles", 0, kMax, false));
    }
    return s;
  }

  Result<LossScaleConfig> loss_scale(const YAML::Node& n) const {
    RETURN_IF_ERROR(
        check_keys(n, "loss_scale", {"init_scale", "growth_factor", "backoff_factor", "growth_interval"}));
    LossScaleConfig c;
    auto positive_number = [&](const char* key, double& out) -> Status {
      if (!n[key]) return Status::Ok();
      std::string where = std::string("loss_scale.") + key;
      ASSIGN_OR_RETURN(out, number(n[key], where));
      if (!(out > 0)) return error(n[key], where, "expected a positive number");
      return Status::Ok();
    };
    RETURN_IF_ERROR(positive_number("init_scale", c.init_scale));
    RETURN_IF_ERROR(positive_number("growth_factor", c.growth_factor));
    RETURN_IF_ERROR(positive_number("backoff_factor", c.backoff_factor));
    if (c.growth_factor <= 1) return error(n["growth_factor"], "loss_scale.growth_factor", "expected more than 1");
    if (c.backoff_factor >= 1) return error(n["backoff_factor"], "loss_scale.backoff_factor", "expected less than 1");
    if (n["growth_interval"]) {
      ASSIGN_OR_RETURN(c.growth_interval, positive(n["growth_interval"], "loss_scale.growth_interval"));
    }
    return c;
  }

  // PEFT's LoraConfig checks r > 0; a rank past 65536 is no low rank (and
  // its A would take the memory check's time to refuse).
  Result<LoraConfig> lora(const YAML::Node& n) const {
    RETURN_IF_ERROR(check_keys(n, "lora", {"targets", "rank", "alpha", "dropout", "train_also"}));
    LoraConfig c;
    if (!n["targets"]) return error(n, "lora.targets", "missing (globs on the weights to adapt, e.g. [\"*q_proj*\"])");
    ASSIGN_OR_RETURN(c.targets, strings(n["targets"], "lora.targets"));
    if (c.targets.empty()) return error(n["targets"], "lora.targets", "expected at least one glob");
    if (n["rank"]) {
      ASSIGN_OR_RETURN(c.rank, positive(n["rank"], "lora.rank"));
      if (c.rank > 65536) return error(n["rank"], "lora.rank", fmt::format("{} is above 65536", c.rank));
    }
    if (n["alpha"]) {
      ASSIGN_OR_RETURN(c.alpha, number(n["alpha"], "lora.alpha"));
      if (!(c.alpha > 0)) return error(n["alpha"], "lora.alpha", "expected a positive number");
    }
    if (n["dropout"]) { ASSIGN_OR_RETURN(c.dropout, number_in(n["dropout"], "lora.dropout", 0, 1, true)); }
    if (n["train_also"]) { ASSIGN_OR_RETURN(c.train_also, strings(n["train_also"], "lora.train_also")); }
    return c;
  }

  static std::optional<std::string> normalize_optimizer(const std::string& name) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const char* known : {"Sgd", "Adam", "AdamW", "Lamb"}) {
      std::string k = known;
      std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
      if (k == lower) return std::string(known);
    }
    return std::nullopt;
  }
};

}  // namespace

Result<DType> parse_precision(const std::string& s) {
  if (s == "fp32") return DType::kFloat;
  if (s == "bf16") return DType::kBFloat16;
  if (s == "fp16") return DType::kFloat16;
  return invalid_argument("'{}' is not a precision (fp32, bf16, fp16)", s);
}

Result<DType> parse_dtype_name(const std::string& s) {
  static const std::map<std::string, DType> kNames{
      {"float32", DType::kFloat}, {"float", DType::kFloat},   {"float64", DType::kDouble}, {"double", DType::kDouble},
      {"float16", DType::kFloat16}, {"bfloat16", DType::kBFloat16}, {"int64", DType::kInt64}, {"int32", DType::kInt32},
      {"int8", DType::kInt8},     {"uint8", DType::kUInt8},   {"bool", DType::kBool}};
  auto it = kNames.find(s);
  if (it == kNames.end())
    return invalid_argument("'{}' is not a dtype (float32, float64, float16, bfloat16, int64, int32, int8, uint8, bool)", s);
  return it->second;
}

Result<ModelDescription> parse_description(const std::string& text, const std::string& base_dir,
                                           const std::string& source_name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: not valid YAML/JSON: {}", source_name, e.what());
  }
  Parser p{source_name};
  ModelDescription d;
  if (root.IsNull()) return d;
  try {
    RETURN_IF_ERROR(p.check_keys(root, "", {"model", "inputs", "labels", "dims", "loss", "trainable", "embeddings", "optimizer",
                                            "schedule", "steps", "epochs", "batch_size", "grad_accum", "seed", "data",
                                            "precision", "loss_scale", "lora"}));
    if (root["model"]) {
      ASSIGN_OR_RETURN(d.model, p.path(root["model"], "model", base_dir));
    }
    if (root["inputs"]) { ASSIGN_OR_RETURN(d.inputs, p.tensors(root["inputs"], "inputs")); }
    if (root["labels"]) { ASSIGN_OR_RETURN(d.labels, p.tensors(root["labels"], "labels")); }
    if (root["dims"]) {
      const YAML::Node& dims = root["dims"];
      if (!dims.IsMap()) return p.error(dims, "dims", "expected a mapping of dim name to size");
      RETURN_IF_ERROR(p.unique_names(dims, "dims", "a dim name"));
      for (const auto& kv : dims) {
        if (!kv.first.IsScalar()) return p.error(kv.first, "dims", "expected a dim name");
        std::string k = kv.first.Scalar();
        ASSIGN_OR_RETURN(int64_t v, p.positive(kv.second, "dims." + k));
        d.dims[k] = v;
      }
    }
    if (root["loss"]) { ASSIGN_OR_RETURN(d.loss, p.loss(root["loss"])); }
    if (root["trainable"]) {
      RETURN_IF_ERROR(p.check_keys(root["trainable"], "trainable", {"include", "exclude"}));
      if (root["trainable"]["include"]) {
        ASSIGN_OR_RETURN(d.trainable.include, p.strings(root["trainable"]["include"], "trainable.include"));
      }
      if (root["trainable"]["exclude"]) {
        ASSIGN_OR_RETURN(d.trainable.exclude, p.strings(root["trainable"]["exclude"], "trainable.exclude"));
      }
    }
    if (root["lora"]) { ASSIGN_OR_RETURN(d.lora, p.lora(root["lora"])); }
    if (root["embeddings"]) {
      const YAML::Node& tables = root["embeddings"];
      if (!tables.IsMap()) return p.error(tables, "embeddings", "expected a mapping of initializer name to {padding_idx: N}");
      std::set<std::string> seen;
      for (const auto& kv : tables) {
        if (!kv.first.IsScalar()) return p.error(kv.first, "embeddings", "expected an initializer name");
        std::string name = kv.first.Scalar(), key = "embeddings." + name;
        if (!seen.insert(name).second) return p.error(kv.first, key, "duplicate key");
        RETURN_IF_ERROR(p.check_keys(kv.second, key, {"padding_idx"}));
        if (!kv.second["padding_idx"]) return p.error(kv.second, key, "expected padding_idx");
        ASSIGN_OR_RETURN(d.padding_rows[name], p.integer(kv.second["padding_idx"], key + ".padding_idx"));
      }
    }
    if (root["optimizer"]) { ASSIGN_OR_RETURN(d.optimizer, p.optimizer(root["optimizer"])); }
    if (root["schedule"]) { ASSIGN_OR_RETURN(d.schedule, p.schedule(root["schedule"])); }
    if (root["steps"]) { ASSIGN_OR_RETURN(d.steps, p.positive(root["steps"], "steps")); }
    if (root["epochs"]) { ASSIGN_OR_RETURN(d.epochs, p.positive(root["epochs"], "epochs")); }
    if (root["batch_size"]) { ASSIGN_OR_RETURN(d.batch_size, p.positive(root["batch_size"], "batch_size")); }
    if (root["grad_accum"]) { ASSIGN_OR_RETURN(d.grad_accum, p.positive(root["grad_accum"], "grad_accum")); }
    if (root["seed"]) { ASSIGN_OR_RETURN(d.seed, p.integer(root["seed"], "seed")); }
    if (root["precision"]) {
      const YAML::Node& v = root["precision"];
      Result<DType> parsed = parse_precision(v.IsScalar() ? v.Scalar() : "");
      if (!parsed.ok()) return p.error(v, "precision", "expected fp32, bf16 or fp16");
      d.precision = *parsed;
    }
    if (root["loss_scale"]) {
      ASSIGN_OR_RETURN(d.loss_scale, p.loss_scale(root["loss_scale"]));
      d.has_loss_scale = true;
    }
    if (root["data"]) {
      const YAML::Node& data = root["data"];
      if (data.IsScalar()) {
        ASSIGN_OR_RETURN(d.data.train, p.path(data, "data", base_dir));
      } else {
        RETURN_IF_ERROR(p.check_keys(data, "data", {"train", "eval", "shuffle", "tokens"}));
        if (data["tokens"]) { ASSIGN_OR_RETURN(d.data.tokens, p.tokens(data["tokens"])); }
        if (data["eval"]) {
          ASSIGN_OR_RETURN(d.data.eval, p.path(data["eval"], "data.eval", base_dir));
        }
        if (data["train"]) {
          ASSIGN_OR_RETURN(d.data.train, p.path(data["train"], "data.train", base_dir));
        }
        if (data["shuffle"]) { ASSIGN_OR_RETURN(d.data.shuffle, p.boolean(data["shuffle"], "data.shuffle")); }
      }
    }
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: {}", source_name, e.what());
  }
  return d;
}

Result<ModelDescription> load_description(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return io_error("model description {} does not exist", path);
  if (std::filesystem::is_directory(path, ec))
    return io_error("model description {} is a folder, not a YAML or JSON file", path);
  // A description is a few lines: anything past 16 MiB is no description (nor /dev/zero, nor a FIFO).
  ASSIGN_OR_RETURN(std::string text, read_file(path, uint64_t{16} << 20));
  ASSIGN_OR_RETURN(ModelDescription d, parse_description(text, fs::path(path).parent_path().string(), path));
  d.path = path;
  return d;
}

}  // namespace ort_train
