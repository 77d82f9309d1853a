// What the fusion passes share: reading a decomposed pattern out of the graph
// (the node that produces a value, a scalar constant, whether an
// intermediate is read only inside the pattern) and replacing it by one node.
//
// A fusion matches from the pattern's last node backwards. It may fuse only
// when every intermediate value is read by pattern nodes alone and is neither
// a graph output nor protected: otherwise something outside (a graph output,
// a gradient built from it) still needs it and the nodes must stay.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/graph_index.h"
#include "graph/passes/pass.h"

namespace ort_train {

class PatternMatcher {
 public:
  // `opset`: the model's default-domain opset, which decides some ops' semantics (Softmax's axis).
  PatternMatcher(GraphIndex& index, const PassContext& ctx, int64_t opset);
  int64_t opset() const { return opset_; }

  // The node producing `value` when it is a default-domain `op_type` node
  // with at least `min_inputs` inputs (the passes run before any check of a
  // file's nodes, so a Pow may have one) not yet claimed by another match;
  // else nullptr.
  const Node* producer(const std::string& value, const std::string& op_type, size_t min_inputs) const;
  // The same for a com.ort_train node (one an earlier fusion made).
  const Node* fused_producer(const std::string& value, const std::string& op_type, size_t min_inputs) const;
  // The node reading `value` when it is the only reader, a default-domain
  // `op_type` node with at least `min_inputs` inputs, not yet claimed, and
  // `value` is no graph output; else nullptr.
  const Node* sole_reader(const std::string& value, const std::string& op_type, size_t min_inputs) const;
  size_t position(const Node* n) const { return static_cast<size_t>(n - index_.graph().nodes.data()); }

  // The value of a one-element numeric constant (an unprotected initializer or
  // a Constant node's output); none for anything else, a trainable
  // initializer above all: it changes every step.
  std::optional<double> scalar(const std::string& value) const;
  // The value of a one-element bool constant (Dropout's training_mode), under the same rules.
  std::optional<bool> bool_scalar(const std::string& value) const;
  // Whether `value` is a scalar constant within a relative 1e-5 of `want`.
  bool is_scalar(const std::string& value, double want) const;
  // For a commutative binary node: the input that is not the scalar `want`
  // (the other input), or none when neither input is that scalar.
  std::optional<std::string> other_than_scalar(const Node& n, double want) const;

  // Whether every reader of `value` is one of `nodes` and nothing else needs it.
  bool only_read_by(const std::string& value, const std::set<size_t>& nodes) const;
  // Whether every output of every node but `last` is read only by `nodes`.
  bool closed(const std::set<size_t>& nodes, size_t last) const;

  // The value's element type and rank, when shape inference knows them.
  std::optional<DType> dtype(const std::string& value) const;
  std::optional<size_t> rank(const std::string& value) const;
  OptShape shape(const std::string& value) const;

  // Marks nodes as taken by a match: producer() no longer returns them.
  void claim(const std::set<size_t>& nodes) { claimed_.insert(nodes.begin(), nodes.end()); }
  const std::set<size_t>& claimed() const { return claimed_; }

  const Graph& graph() const { return index_.graph(); }
  GraphIndex& index() const { return index_; }
  const PassContext& context() const { return ctx_; }

 private:
  std::optional<double> scalar_of_type(const std::string& value, bool boolean) const;

  GraphIndex& index_;
  const PassContext& ctx_;
  std::set<std::string> protected_;
  std::set<size_t> claimed_;
  int64_t opset_;
};

// ReduceMean's axes (attribute before opset 18, constant input after), when keepdims.
std::optional<std::vector<int64_t>> reduce_mean_axes(const Graph& g, const Node& n);
// The first normalized axis (negative) when `axes` are the last axes of a
// rank-`rank` tensor (the LayerNorm and RMSNorm case); none otherwise.
std::optional<int64_t> suffix_axis(std::vector<int64_t> axes, std::optional<size_t> rank);

// The com.ort_train node `op_type` that replaces a pattern ending in `last`:
// it writes last's output, and is named after last's scope (its name up to
// the final '/') followed by `op_type`.
Node fused_node(const GraphIndex& index, const Node& last, const std::string& op_type, std::vector<std::string> inputs,
                std::vector<Attribute> attributes);

// A pattern to replace: the positions of its nodes (including `last`) and
// the fused node that takes last's place.
struct FusedMatch {
  size_t last = 0;
  std::set<size_t> nodes;
  Node fused;
};
// Replaces every match: node `last` becomes `fused` (keeping its output
// name, so readers and graph outputs are untouched) and the other nodes of
// the match are removed; the model imports com.ort_train. Counts the removed
// nodes into ctx; true when anything was fused.
bool replace_matches(Model& model, GraphIndex& index, const PassContext& ctx, std::vector<FusedMatch> matches);

// A fusion pass: match() looks for its pattern ending (or anchored) at one
// node and returns it; apply() offers every node in order, then replaces
// every match at once. Fusions never create what another fusion matches,
// so one run settles.
// Nodes without outputs are never offered (a file may hold one).
class FusionPass : public Pass {
 public:
  bool settles_in_one_run() const override { return true; }
  Result<bool> apply(Model& model, const PassContext& ctx) final;

 protected:
  virtual std::optional<FusedMatch> match(const Node& anchor, PatternMatcher& pm) = 0;
};

}  // namespace ort_train
