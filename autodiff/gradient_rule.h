// Gradient rules: one per op, registered in autodiff/rules/<family>.cc next to
// the op family's other files. A rule sees the forward node and emits nodes
// over its inputs I(i), outputs O(i) and output gradients GO(i), then names the
// gradient of each input the driver asked for with set_GI(i, value).
//
// The driver (gradient_builder.cc) does the bookkeeping so rules stay short:
// it only asks for inputs on a path from a trainable initializer to the loss,
// sums a broadcast gradient back to its input's shape, adds up gradients from
// several consumers and checks every gradient's dtype and shape. A rule may
// therefore return a gradient of the *output's* broadcast shape for an input.
//
//   ORT_GRADIENT("Relu").rule([](GradientContext& c) -> Status {
//     ASSIGN_OR_RETURN(auto gx, c.add1("ReluGrad", {c.GO(0), c.O(0)}, {}, kOrtTrainDomain));
//     c.set_GI(0, gx);
//     return Status::Ok();
//   });
//   ORT_GRADIENT("Gather").no_gradient_for({1}).rule(...);   // indices
//   ORT_GRADIENT("Round").zero();              // derivative is 0 almost everywhere
//   ORT_GRADIENT("Shape").not_differentiable(); // output is not a function of input values
#pragma once
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph_builder.h"

namespace ort_train {

class GradientContext {
 public:
  GradientContext(GraphBuilder& b, size_t node_index, std::vector<std::string> output_grads,
                  std::vector<bool> wanted, const std::map<std::string, int64_t>* padding_rows = nullptr)
      : b_(b), node_index_(node_index), node_(b.model().graph.nodes[node_index]),
        go_(std::move(output_grads)), wanted_(std::move(wanted)), gi_(wanted_.size()), padding_rows_(padding_rows) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return b_.opset(node_.domain); }
  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  const std::string& I(size_t i) const { return node_.inputs.at(i); }
  bool has_input(size_t i) const { return node_.has_input(i); }
  const std::string& O(size_t i) const { return node_.outputs.at(i); }
  // Gradient flowing into output i, or "" when nothing downstream depends on it.
  const std::string& GO(size_t i) const { return go_.at(i); }
  bool has_GO(size_t i) const { return i < go_.size() && !go_[i].empty(); }
  // GO(i), or zeros shaped like output i (multi-output ops whose other outputs are unused).
  Result<std::string> GO_or_zeros(size_t i);
  // Whether the driver wants the gradient of input i.
  bool needs_GI(size_t i) const { return i < wanted_.size() && wanted_[i]; }
  void set_GI(size_t i, std::string grad) { gi_.at(i) = std::move(grad); }
  const std::vector<std::string>& input_grads() const { return gi_; }
  // Output i of the forward node, adding it first when the model left the optional
  // output out (Dropout's mask, LayerNormalization's mean and inverse std).
  Result<std::string> ensure_output(size_t i);
  // Turns the forward node into the project's training form of it, an op of
  // `op_type` in com.ort_train with the same inputs and attributes and more
  // outputs to keep for the backward (LSTM -> LSTMTraining, as ONNX Runtime
  // does); ensure_output then adds those.
  Status as_training_form(const std::string& op_type);

  // Emitting and querying, forwarded to the graph builder.
  GraphBuilder& builder() { return b_; }
  Result<std::string> add1(const std::string& op, std::vector<std::string> inputs,
                           std::vector<Attribute> attrs = {}, const std::string& domain = "") {
    return b_.add1(op, std::move(inputs), std::move(attrs), domain, hint(op));
  }
  Result<std::vector<std::string>> add(const std::string& op, std::vector<std::string> inputs, size_t n,
                                       std::vector<Attribute> attrs = {}, const std::string& domain = "") {
    return b_.add(op, std::move(inputs), n, std::move(attrs), domain, hint(op));
  }
  DType dtype(const std::string& v) const { return b_.dtype(v); }
  const OptShape& shape(const std::string& v) const { return b_.shape(v); }
  int64_t rank(const std::string& v) const { return b_.rank(v); }
  const Tensor* constant_value(const std::string& v) const { return b_.constant_value(v); }
  // The row of embedding table `table` that lookups never train (padding_idx), if the description names one.
  std::optional<int64_t> padding_row(const std::string& table) const {
    if (!padding_rows_) return std::nullopt;
    auto it = padding_rows_->find(table);
    return it == padding_rows_->end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  // An error naming this node, for attribute combinations a rule does not handle.
  template <typename... Args>
  Status unsupported_case(fmt::format_string<Args...> f, Args&&... args) const {
    return unsupported("no gradient for {}: {}", node_.describe(), fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  std::string hint(const std::string& op) const { return node_.name + "_grad/" + op; }
  GraphBuilder& b_;
  size_t node_index_;
  Node node_;  // a copy: the graph's node vector grows while rules emit nodes
  std::vector<std::string> go_;
  std::vector<bool> wanted_;
  std::vector<std::string> gi_;
  const std::map<std::string, int64_t>* padding_rows_;
};

enum class GradientKind {
  kRule,              // a rule builds the input gradients
  kZero,              // derivative is zero wherever it exists (Round, Floor, Sign): cuts the path
  kNotDifferentiable  // outputs do not depend smoothly on inputs (Shape, comparisons): cuts the path
};

struct GradientRule {
  std::string domain;
  std::string op_type;
  GradientKind kind = GradientKind::kRule;
  std::vector<size_t> no_gradient_inputs;   // index, shape, axes, condition inputs
  std::vector<size_t> no_gradient_outputs;  // outputs that are not functions to differentiate (running statistics)
  std::function<Status(GradientContext&)> build;
  std::string source;  // the file that registered it (__FILE__): docs/op_files.md
  bool differentiable_input(size_t i) const;
  bool differentiable_output(size_t i) const;
};

class GradientRegistry {
 public:
  static GradientRegistry& instance();
  void add(GradientRule rule);
  const GradientRule* find(const std::string& domain, const std::string& op_type) const;
  std::vector<const GradientRule*> all() const;

 private:
  std::vector<std::unique_ptr<GradientRule>> rules_;
};

// Fluent registration used by ORT_GRADIENT; the last call registers the rule.
class GradientRuleBuilder {
 public:
  GradientRuleBuilder(std::string op_type, std::string domain, const char* file) {
    rule_.op_type = std::move(op_type);
    rule_.domain = std::move(domain);
    rule_.source = file;
  }
  GradientRuleBuilder& no_gradient_for(std::vector<size_t> inputs) {
    rule_.no_gradient_inputs = std::move(inputs);
    return *this;
  }
  GradientRuleBuilder& no_gradient_from_outputs(std::vector<size_t> outputs) {
    rule_.no_gradient_outputs = std::move(outputs);
    return *this;
  }
  int rule(std::function<Status(GradientContext&)> fn);
  int zero();
  int not_differentiable();

 private:
  GradientRule rule_;
};

}  // namespace ort_train

#define ORT_GRADIENT(op) \
  [[maybe_unused]] static const int ORT_CONCAT(_gradient_rule_, __LINE__) = \
      ::ort_train::GradientRuleBuilder(op, "", __FILE__)
#define ORT_GRADIENT_IN_DOMAIN(domain, op)                                     \
  [[maybe_unused]] static const int ORT_CONCAT(_gradient_rule_, __LINE__) = \
      ::ort_train::GradientRuleBuilder(op, domain, __FILE__)
