#include "graph/passes/autocast.h"
#include "graph/passes/fresh_names.h"
#include "graph/passes/pass.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/op_schema.h"
#include "graph/shape_inference.h"

namespace ort_train {
namespace {

bool is_gemm(const Node& n) {
  if (n.domain.empty()) return n.op_type == "MatMul" || n.op_type == "Gemm";
  return n.domain == kOrtTrainDomain && n.op_type == "FusedMatMul";
}

class Rewriter {
 public:
  // `types`: every value's element type, inferred where the model's own value
  // infos are missing (a model read from a file has them only where its
  // exporter wrote them).
  Rewriter(Graph& g, DType low, std::unordered_map<std::string, DType> types)
      : g_(g), low_(low), suffix_(low == DType::kBFloat16 ? "bf16" : "fp16"), types_(std::move(types)), fresh_(g) {}

  bool float32(const std::string& v) const {
    auto it = types_.find(v);
    return it != types_.end() && it->second == DType::kFloat;
  }

  // Declares `name` as `like` with another element type.
  void declare(const std::string& name, const std::string& like, DType dtype) {
    declare_like(g_, name, like, dtype);
    types_[name] = dtype;
  }

  // A Cast of `value` to `to` into `y` (a new value declared with value's
  // shape when y is empty), in a node named after node_name; returns y.
  std::string cast(const std::string& value, DType to, const std::string& node_name, std::vector<Node>& out,
                   std::string y = "") {
    if (y.empty()) {
      y = fresh_(value + "/" + (to == DType::kFloat ? "float" : suffix_));
      declare(y, value, to);
    }
    Node n;
    n.name = fresh_(node_name);
    n.op_type = "Cast";
    n.inputs = {value};
    n.outputs = {y};
    n.attributes = {Attribute::make_int("to", static_cast<int64_t>(to))};
    out.push_back(std::move(n));
    ++report.casts;
    return y;
  }

  // Rewrites one GEMM into out: casts in (a bias or C too, which the GEMM
  // adds before its one rounding), the GEMM in the low type, the cast back.
  void rewrite(Node n, std::vector<Node>& out) {
    const std::string result = n.outputs[0];
    for (size_t i = 0; i < n.inputs.size(); ++i)
      n.inputs[i] = cast(n.inputs[i], low_, n.name + "/autocast_" + std::to_string(i), out);
    std::string low_result = fresh_(result + "/" + suffix_);
    declare(low_result, result, low_);
    n.outputs[0] = low_result;
    std::string node_name = n.name;
    report.gemms.push_back(n.op_type + " at " + node_name);
    out.push_back(std::move(n));
    ++report.nodes;
    cast(low_result, DType::kFloat, node_name + "/autocast_out", out, result);
  }

  AutocastReport report;

 private:
  Graph& g_;
  DType low_;
  std::string suffix_;
  std::unordered_map<std::string, DType> types_;
  FreshNames fresh_;  // names no value or node has yet
};

}  // namespace

Result<std::unordered_map<std::string, DType>> value_dtypes(const Model& model) {
  const Graph& g = model.graph;
  std::unordered_map<std::string, DType> types;
  for (const auto& [name, v] : g.values) types[name] = v.dtype;
  bool complete = std::all_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return std::all_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) {
      auto it = types.find(o);
      return o.empty() || (it != types.end() && it->second != DType::kUndefined);
    });
  });
  if (!complete) {
    // Inferred on a copy, for the types only: the graph keeps its own value
    // infos, which later inference completes with the description's dims.
    Model copy = model;
    RETURN_IF_ERROR(infer_shapes(copy));
    for (const auto& [name, v] : copy.graph.values) types[name] = v.dtype;
  }
  return types;
}

Result<AutocastReport> autocast(Model& model, DType low) {
  if (low == DType::kFloat) return AutocastReport{};
  if (!dtype_is_half(low)) return invalid_argument("autocast: {} is not a low precision", dtype_name(low));
  Graph& g = model.graph;
  auto types = value_dtypes(model);
  if (!types.ok()) return types.status().with_context("autocast");
  Rewriter rw(g, low, std::move(*types));
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  for (Node& n : g.nodes) {
    // A Gemm that scales its C stays float32: C's gradient would be a
    // 16-bit Mul, which has no kernel (exporters write beta 1).
    bool eligible = is_gemm(n) && n.inputs.size() >= 2 && n.outputs.size() == 1 && rw.float32(n.inputs[0]) &&
                    rw.float32(n.inputs[1]) && rw.float32(n.outputs[0]) &&
                    (n.inputs.size() < 3 || n.inputs[2].empty() || rw.float32(n.inputs[2])) &&
                    (n.op_type != "Gemm" || n.inputs.size() < 3 || n.inputs[2].empty() || n.attr_float("beta", 1.f) == 1.f);
    if (eligible && n.inputs.size() == 3 && n.inputs[2].empty()) n.inputs.resize(2);
    if (eligible)
      rw.rewrite(std::move(n), nodes);
    else
      nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  rw.report.low = low;
  return rw.report;
}

namespace {

// The pass through the pass manager (the training graph runs it after the
// other forward passes and before the loss; PassContext::precision says to
// what). Once run, its GEMMs read 16-bit operands and are left alone.
class AutocastPass : public Pass {
 public:
  std::string name() const override { return "autocast"; }
  // After the forward's fusions (it casts around the FusedMatMuls they made), before the backward.
  PassOrder order() const override { return {.phases = kPrecisionPhase, .required = true}; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    if (ctx.precision == DType::kFloat) return false;
    ASSIGN_OR_RETURN(AutocastReport r, autocast(model, ctx.precision));
    for (const std::string& g : r.gemms) ctx.note(g + ": " + dtype_name(r.low));
    ctx.count(r.nodes + r.casts);
    return r.nodes > 0;
  }
};

}  // namespace

ORT_REGISTER_PASS(AutocastPass);

}  // namespace ort_train
