// half_activations: after autocast (--precision bf16|fp16), a GEMM's 16-bit
// product feeds the ops after it in 16 bits where PyTorch's autocast keeps
// them so, instead of going through a Cast to float32 and another back before
// the next GEMM. An op follows when its schema says it runs in 16 bits
// (kSixteenBitInput, graph/op_schema.h) and every float operand it computes
// on has a 16-bit version (PyTorch's type promotion: a bfloat16 tensor added
// to a float32 one gives float32, so a residual Add with the float32 stream
// stays float32). They are:
//   GELU, SiLU, ReLU, Tanh, Sigmoid, Neg; Add, Sub, Mul, Div, Sum;
//   Dropout (its data; the ratio and mask stay as they are);
//   the views Reshape, Flatten, Squeeze, Unsqueeze, Identity, Transpose;
//   com.ort_train Attention (its Q, K, V; PyTorch casts scaled_dot_product_
//   attention's operands to 16 bits): scores and softmax in float32 inside,
//   the probabilities rounded to 16 bits for the product with V.
// Softmax, the normalizations and the losses keep reading float32 (a Cast
// back to float32 stays wherever one of them reads a 16-bit value).
// A Cast to 16 bits of a value that has a 16-bit version is dropped: the
// GEMM reads that version. Gradients follow (each op's gradient is in its
// dtype; a Cast's is a Cast), so GeluGrad, DropoutGrad and the sums of
// gradients are 16-bit too, as in PyTorch.
//
// Not on by default: `--enable-pass half_activations` turns it on. It is a
// GPU optimization (half the bytes through the memory-bound ops, two Casts
// fewer per GEMM pair) that has not been timed on a GPU, and on the CPU its
// 16-bit kernels widen to float32 (runtime/cpu/kernels/half_twins.cc). It
// makes bias_gelu_fusion stand aside (autodiff/training_graph.cc), so the
// bias is added inside the 16-bit GEMM before its rounding and GELU reads the
// GEMM's 16-bit product, as PyTorch's addmm then gelu do.
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/op_schema.h"
#include "graph/passes/autocast.h"
#include "graph/passes/fresh_names.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

// The inputs of a following op that carry its data (the rest are shapes,
// axes, a ratio or a mode, left as they are): the op's schema says which
// (kSixteenBitInput, graph/op_schema.h); empty when it does not run in 16 bits.
std::vector<size_t> data_inputs(const Node& n) {
  return sixteen_bit_inputs(OpRegistry::instance().traits(n.domain, n.op_type), n.inputs.size());
}

class HalfActivations : public Pass {
 public:
  std::string name() const override { return "half_activations"; }
  // It keeps autocast's 16-bit products 16-bit, and a GELU's bias must be
  // inside the GEMM (matmul_add_fusion's, where PyTorch's addmm adds it), not
  // in a BiasGelu.
  PassOrder order() const override {
    return {.phases = kPrecisionPhase, .after = {"autocast"}, .replaces = {"bias_gelu_fusion"}};
  }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    if (ctx.precision == DType::kFloat) return false;
    Graph& g = model.graph;
    ASSIGN_OR_RETURN(types_, value_dtypes(model));
    low_ = ctx.precision;
    suffix_ = low_ == DType::kBFloat16 ? "bf16" : "fp16";
    low_of_.clear();
    fresh_.emplace(g);
    graph_outputs_.clear();
    for (const ValueInfo& o : g.outputs) graph_outputs_.insert(o.name);

    std::unordered_map<std::string, std::string> renamed;  // dropped Cast's output -> the 16-bit value it equals
    std::vector<Node> nodes;
    nodes.reserve(g.nodes.size());
    int64_t changed = 0;
    for (Node& n : g.nodes) {
      for (std::string& in : n.inputs)
        if (auto it = renamed.find(in); it != renamed.end()) in = it->second;
      if (is_cast(n)) {
        auto to = static_cast<DType>(n.attr_int("to", 0));
        auto known = low_of_.find(n.inputs[0]);
        if (to == low_ && known != low_of_.end() && !graph_outputs_.count(n.outputs[0])) {
          renamed[n.outputs[0]] = known->second;  // a round trip: the 16-bit value itself
          ++changed;
          continue;
        }
        if (to == DType::kFloat && dtype(n.inputs[0]) == low_) low_of_[n.outputs[0]] = n.inputs[0];
      }
      if (follows(n)) {
        follow(g, std::move(n), nodes, ctx);
        changed += 2;
      } else {
        nodes.push_back(std::move(n));
      }
    }
    changed += drop_unread_casts(nodes);
    g.nodes = std::move(nodes);
    ctx.count(changed);
    return changed > 0;
  }

 private:
  static bool is_cast(const Node& n) {
    return n.op_type == "Cast" && n.domain.empty() && n.inputs.size() == 1 && n.outputs.size() == 1;
  }

  // Every data input has a 16-bit version and the op computes in float32.
  bool follows(const Node& n) const {
    std::vector<size_t> data = data_inputs(n);
    return !data.empty() && !n.outputs.empty() && dtype(n.outputs[0]) == DType::kFloat &&
           std::all_of(data.begin(), data.end(),
                       [&](size_t i) { return i < n.inputs.size() && low_of_.count(n.inputs[i]) > 0; });
  }

  // n on the 16-bit versions into a new 16-bit output, then a Cast of it back
  // into n's old output for the readers that stay float32.
  void follow(Graph& g, Node n, std::vector<Node>& nodes, const PassContext& ctx) {
    for (size_t i : data_inputs(n)) n.inputs[i] = low_of_.at(n.inputs[i]);
    const std::string result = n.outputs[0];
    std::string low_result = (*fresh_)(result + "/" + suffix_);
    declare(g, low_result, result);
    n.outputs[0] = low_result;
    const std::string node_name = n.name;
    ctx.note(n.op_type + " at " + node_name + ": " + dtype_name(low_));
    nodes.push_back(std::move(n));
    low_of_[result] = low_result;
    Node back;
    back.name = (*fresh_)(node_name + "/half_activations_out");
    back.op_type = "Cast";
    back.inputs = {low_result};
    back.outputs = {result};
    back.attributes = {Attribute::make_int("to", static_cast<int64_t>(DType::kFloat))};
    nodes.push_back(std::move(back));
  }

  // Casts back to float32 that nothing reads any more (the next GEMM reads
  // the 16-bit value): a follower's own, and a GEMM's whose only reader
  // followed. Returns how many went.
  int64_t drop_unread_casts(std::vector<Node>& nodes) const {
    std::unordered_set<std::string> read;
    for (const Node& n : nodes) read.insert(n.inputs.begin(), n.inputs.end());
    size_t before = nodes.size();
    std::erase_if(nodes, [&](const Node& n) {
      return is_cast(n) && !read.count(n.outputs[0]) && !graph_outputs_.count(n.outputs[0]) &&
             dtype(n.inputs[0]) == low_;
    });
    return static_cast<int64_t>(before - nodes.size());
  }

  DType dtype(const std::string& v) const {
    auto it = types_.find(v);
    return it == types_.end() ? DType::kUndefined : it->second;
  }

  // `name` as `like` in the low type.
  void declare(Graph& g, const std::string& name, const std::string& like) {
    declare_like(g, name, like, low_);
    types_[name] = low_;
  }

  DType low_ = DType::kFloat;
  std::string suffix_;
  std::unordered_map<std::string, DType> types_;
  std::unordered_map<std::string, std::string> low_of_;  // float32 value -> its 16-bit version
  std::optional<FreshNames> fresh_;  // this run's: names no value or node has yet
  std::unordered_set<std::string> graph_outputs_;
};

}  // namespace

ORT_REGISTER_PASS(HalfActivations);

}  // namespace ort_train
